// The fleet guard's log: problems are logged when they appear, change or clear, not at every
// check. The worker keeps what it last logged in its own memory, so a restarted worker logs the
// standing ones once more.

extern "C" {
#include "postgres.h"
}

#include "pg/fleet/fleet_log.hpp"
#include "pg/fleet/fleet_shared.hpp"
#include "pg/settings.hpp"

namespace {

// What the worker last logged for each member, by the member's text.
struct LoggedProblem {
    char member[kMemberTextBytes];
    uint32_t problem_bits;
};
LoggedProblem logged_problems[snowflake::kMaxFleetMembers];
int logged_count = 0;
bool logged_fence = false;

}  // namespace

void snowflake_log_fleet_changes(const MemberStatus *statuses, int count, bool fenced,
                                 const char *holder) {
    for (int i = 0; i < count; i++) {
        const MemberStatus &status = statuses[i];
        uint32_t before = 0;
        for (int l = 0; l < logged_count; l++) {
            if (strcmp(logged_problems[l].member, status.member) == 0) {
                before = logged_problems[l].problem_bits;
            }
        }
        if (status.problem_bits == before) {
            continue;
        }
        if (status.problem_bits != 0) {
            ereport(WARNING, (errmsg("snowflake fleet guard: member %d (%s): %s", i + 1,
                                     status.member, status.problem_words)));
        } else {
            ereport(LOG, (errmsg("snowflake fleet guard: member %d (%s): no problem any more",
                                 i + 1, status.member)));
        }
    }
    for (int l = 0; l < logged_count; l++) {
        bool listed = false;
        for (int i = 0; i < count && !listed; i++) {
            listed = strcmp(logged_problems[l].member, statuses[i].member) == 0;
        }
        if (!listed && logged_problems[l].problem_bits != 0) {
            ereport(LOG, (errmsg("snowflake fleet guard: %s is no longer checked",
                                 logged_problems[l].member)));
        }
    }
    for (int i = 0; i < count; i++) {
        strlcpy(logged_problems[i].member, statuses[i].member, kMemberTextBytes);
        logged_problems[i].problem_bits = statuses[i].problem_bits;
    }
    logged_count = count;
    if (fenced != logged_fence) {
        if (fenced) {
            ereport(
                WARNING,
                (errmsg("snowflake fleet guard: member %s holds this server's node pair", holder),
                 snowflake_on_duplicate_node_setting == kFleetDuplicateRefuse
                     ? errdetail("snowflake.on_duplicate_node is refuse: this server "
                                 "generates no ids while that member is up.")
                     : errdetail("snowflake.on_duplicate_node is warn: both servers go on "
                                 "generating, and their ids can collide."),
                 errhint("Give one of the two servers another node pair, or stop the one "
                         "that should not generate.")));
        } else {
            ereport(LOG, (errmsg("snowflake fleet guard: no other member holds this server's "
                                 "node pair any more")));
        }
        logged_fence = fenced;
    }
}
