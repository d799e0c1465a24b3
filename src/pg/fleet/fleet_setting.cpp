// The check of snowflake.fleet when it is set: the list must fit the guard's shared memory, each
// member must be a connection string that libpq parses, and none may carry a password, since
// PostgreSQL logs a changed setting's value. No message quotes the list.

extern "C" {
#include "postgres.h"

#include "utils/guc.h"
}

#include "core/fleet.hpp"
#include "pg/fleet/fleet_setting.hpp"
#include "pg/fleet/peer_query.hpp"

bool snowflake_check_fleet_setting(char **new_value, void **extra, GucSource source) {
    const char *list = *new_value != nullptr ? *new_value : "";
    snowflake::FleetSpan spans[snowflake::kMaxFleetMembers];
    const snowflake::FleetSplit split = snowflake::split_fleet_list(list, spans);
    // Every message is set here, so that PostgreSQL's own, which quotes the value, is not used.
    GUC_check_errmsg("invalid value for parameter \"snowflake.fleet\"");
    if (split.too_many) {
        GUC_check_errdetail("snowflake.fleet lists more than %d servers.",
                            snowflake::kMaxFleetMembers);
        return false;
    }
    for (int i = 0; i < split.count; i++) {
        char *member = pnstrdup(list + spans[i].begin, spans[i].length);
        const ConninfoFacts facts = snowflake_inspect_conninfo(member);
        pfree(member);
        if (!facts.parses) {
            // libpq's message quotes the string: it is not shown.
            GUC_check_errdetail("Member %d of snowflake.fleet is not a libpq connection string.",
                                i + 1);
            GUC_check_errhint(
                "Separate the members with semicolons, such as "
                "'host=10.0.0.1 port=5432 dbname=app; host=10.0.0.2 port=5432 "
                "dbname=app'.");
            return false;
        }
        if (facts.carries_secret) {
            // PostgreSQL logs a changed setting's new value at every reload.
            GUC_check_errdetail(
                "Member %d of snowflake.fleet carries a password, which the "
                "server log would show.",
                i + 1);
            GUC_check_errhint(
                "Put the passwords in the passfile of the operating-system user "
                "that runs the server (~/.pgpass, or passfile= in the string).");
            return false;
        }
    }
    return true;
}
