// snowflake_partition_table() (version 1.7): a table's setup for time partitions, written to the
// configuration table as that table's owner (the extension's), whom no role's code reaches, and
// applied at once. doc/reference.md "Time partitions" says what it does.

extern "C" {
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
}

#include "core/partition_plan.hpp"
#include "pg/as_owner.hpp"
#include "pg/partitions/partition_parts.hpp"
#include "pg/partitions/partition_setups.hpp"

extern "C" {
PG_FUNCTION_INFO_V1(snowflake_partition_table);
}

// Sets a table up for time partitions and brings it up to date at once (doc/reference.md).
extern "C" Datum snowflake_partition_table(PG_FUNCTION_ARGS) {
    using namespace snowflake_partitions;
    constexpr char kName[] = "snowflake_partition_table()";
    if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2) || PG_ARGISNULL(4) ||
        PG_ARGISNULL(5)) {
        ereport(ERROR,
                (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
                 errmsg("%s needs a table, an interval, a count ahead and a time zone", kName),
                 errhint("Call it as snowflake_partition_table('events', '1 month').")));
    }
    refuse_unfit_transaction(kName);
    const Report report = open_report(fcinfo, kName);
    Setup setup;
    setup.parent = PG_GETARG_OID(0);
    setup.every = PG_GETARG_DATUM(1);
    setup.unit = unit_of_argument(setup.every, kName);
    setup.ahead = PG_GETARG_INT32(2);
    if (setup.ahead < 0 || setup.ahead > 1000) {
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("ahead must be between 0 and 1000, not %d", setup.ahead),
                        errhint("Pass how many partitions past the current one to keep, such as "
                                "3.")));
    }
    setup.has_retain = !PG_ARGISNULL(3);
    setup.retain = setup.has_retain ? PG_GETARG_DATUM(3) : Datum(0);
    if (setup.has_retain) {
        const Interval *retain = PG_GETARG_INTERVAL_P(3);
        if (retain->month < 0 || retain->day < 0 || retain->time < 0 ||
            (retain->month == 0 && retain->day == 0 && retain->time == 0)) {
            ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                            errmsg("retain must be a positive interval"),
                            errhint("Pass how long to keep rows, such as '12 months', or NULL to "
                                    "keep every partition.")));
        }
    }
    setup.time_zone = text_to_cstring(PG_GETARG_TEXT_PP(4));
    setup.drop_expired = PG_GETARG_BOOL(5);

    const int guc_nest_level = pin_search_path();
    SPI_connect();
    const Extension extension = find_extension();
    lock_parent(setup.parent, kName, true);
    refuse_unnamed_zone(setup.time_zone);
    Oid types[6] = {OIDOID, INTERVALOID, INT4OID, INTERVALOID, TEXTOID, BOOLOID};
    Datum values[6] = {ObjectIdGetDatum(setup.parent),       setup.every,
                       Int32GetDatum(setup.ahead),           setup.retain,
                       CStringGetTextDatum(setup.time_zone), BoolGetDatum(setup.drop_expired)};
    const char nulls[7] = {' ', ' ', ' ', setup.has_retain ? ' ' : 'n', ' ', ' ', '\0'};
    // The table's old setup goes as every removal of a setup goes, and the new one is inserted,
    // which no publication of the configuration table can fail (remove_setups()).
    remove_setups(extension.config_table, setup.parent);
    run_as_owner(report, owner_of(extension.config_table),
                 psprintf("INSERT INTO %s (parent, every, ahead, retain, time_zone, "
                          "drop_expired) VALUES ($1::pg_catalog.regclass, $2, $3, $4, $5, $6)",
                          extension.config_table_text),
                 6, types, values, nulls, false);
    maintain_table(report, extension, setup, true);
    SPI_finish();
    unpin_search_path(guc_nest_level);
    return static_cast<Datum>(0);
}
