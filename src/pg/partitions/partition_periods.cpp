// The periods of time partitions: their boundaries, which PostgreSQL computes in the table's time
// zone, the time zones a setup may name, snowflake_partition_boundaries() (version 1.8), which
// shows the periods without a table, and snowflake_partition_intervals() (version 1.12).

extern "C" {
#include "postgres.h"

#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "pgtime.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"
}

#include "core/codec.hpp"
#include "core/partition_plan.hpp"
#include "pg/as_owner.hpp"
#include "pg/partitions/partition_parts.hpp"

extern "C" {
PG_FUNCTION_INFO_V1(snowflake_partition_boundaries);
PG_FUNCTION_INFO_V1(snowflake_partition_intervals);
}

namespace {

// The names of pg_timezone_names, read once per backend (reading them loads every zone's file)
// and again when a name is not among them, so that a zone added to the server's time zone data
// since is found.
HTAB *zone_names = nullptr;

// Reads every name of pg_timezone_names into zone_names.
void read_zone_names() {
    if (zone_names == nullptr) {
        HASHCTL control{};
        control.keysize = TZ_STRLEN_MAX + 1;
        control.entrysize = TZ_STRLEN_MAX + 1;
        zone_names =
            hash_create("snowflake time zone names", 1024, &control, HASH_ELEM | HASH_STRINGS);
    }
    if (SPI_execute("SELECT name FROM pg_catalog.pg_timezone_names", true, 0) != SPI_OK_SELECT) {
        elog(ERROR, "snowflake: could not read pg_timezone_names");
    }
    for (uint64 i = 0; i < SPI_processed; i++) {
        const char *name = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1);
        if (name != nullptr && strlen(name) <= TZ_STRLEN_MAX) {
            (void)hash_search(zone_names, name, HASH_ENTER, nullptr);
        }
    }
}

// Whether the time zone is a name of pg_timezone_names.
bool is_zone_name(const char *time_zone) {
    if (strlen(time_zone) > TZ_STRLEN_MAX) {
        return false;
    }
    for (int attempt = 0; attempt < 2; attempt++) {
        if (zone_names != nullptr && hash_search(zone_names, time_zone, HASH_FIND, nullptr)) {
            return true;
        }
        if (attempt == 0) {
            read_zone_names();
        }
    }
    return false;
}

}  // namespace

namespace snowflake_partitions {

using snowflake::PartitionUnit;

// Refuses a time zone that is not a name of pg_timezone_names: only a zone's name means the same
// in every session (an abbreviation depends on the session's timezone_abbreviations, and a POSIX
// offset such as UTC+99 on no rule at all).
void refuse_unnamed_zone(const char *time_zone) {
    if (!is_zone_name(time_zone)) {
        ereport(ERROR,
                (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                 errmsg("time zone \"%s\" is not the name of a time zone", time_zone),
                 errhint("Name one of pg_timezone_names, such as 'UTC' or 'Europe/Berlin': an "
                         "abbreviation or an offset would align the partitions differently in "
                         "another session.")));
    }
}

// The boundaries, computed by PostgreSQL in the table's time zone as its owner: from the period
// of the id first_id to the end of the period ahead periods after the one that holds now, or to
// the id last_id if that is later (a partition made further ahead). Days and longer periods start
// at local midnight, counted on the local calendar from the first (a day of 23 or 25 hours, a
// month of 28 to 31 days; where midnight does not exist, the day starts when the clock jumps past
// it; two midnights that are one instant, around a day the zone skipped, are one boundary, named
// by the later day). Hours start where the local clock shows minute 0, found on a quarter-hour
// grid of absolute time: an hour wherever the offset changes by whole hours, 30 or 90 minutes
// across a change of half an hour. Both depend only on the instant, never on where the series
// began, so that boundaries computed after the retention has removed the oldest partitions are
// those computed before. Fills each boundary's first id and the fields that name the period it
// starts; returns how many, or -1 where they would be more than kMaxBoundaries.
int compute_boundaries(const Report &report, const Extension &extension, const Setup &setup,
                       Oid owner, int64 first_id, int64 last_id, TimestampTz now,
                       int64 **boundary_ids, snowflake::PeriodStart **starts) {
    const char *series =
        setup.unit == PartitionUnit::kHour
            ? "SELECT b, b AT TIME ZONE 'UTC' FROM pg_catalog.generate_series("
              "pg_catalog.date_trunc('hour', %s.snowflake_timestamp($1), 'UTC') "
              "- interval '2 hours', "
              "GREATEST(pg_catalog.date_trunc('hour', $2, 'UTC') + ($6 + 3) * $5, "
              "%s.snowflake_timestamp($7)), interval '15 minutes') AS b "
              "WHERE pg_catalog.date_part('minute', b AT TIME ZONE $3) OPERATOR(pg_catalog.=) 0"
            : "SELECT l AT TIME ZONE $3, l FROM pg_catalog.generate_series("
              "pg_catalog.date_trunc($4, %s.snowflake_timestamp($1) AT TIME ZONE $3), "
              "GREATEST(pg_catalog.date_trunc($4, $2 AT TIME ZONE $3) + ($6 + 1) * $5, "
              "%s.snowflake_timestamp($7) AT TIME ZONE $3), $5) AS l";
    char *statement = psprintf(
        "SELECT DISTINCT ON (1) %s.snowflake_min_id(q.b), "
        "pg_catalog.date_part('year', q.l)::int, "
        "pg_catalog.date_part('month', q.l)::int, pg_catalog.date_part('day', q.l)::int, "
        "pg_catalog.date_part('hour', q.l)::int, pg_catalog.date_part('isoyear', q.l)::int, "
        "pg_catalog.date_part('week', q.l)::int FROM (%s) AS q(b, l) ORDER BY 1, q.l DESC "
        "LIMIT %d",
        extension.schema, psprintf(series, extension.schema, extension.schema), kMaxBoundaries + 1);
    Oid types[7] = {INT8OID, TIMESTAMPTZOID, TEXTOID, TEXTOID, INTERVALOID, INT4OID, INT8OID};
    Datum values[7] = {Int64GetDatum(first_id),
                       TimestampTzGetDatum(now),
                       CStringGetTextDatum(setup.time_zone),
                       CStringGetTextDatum(snowflake::partition_unit_name(setup.unit)),
                       setup.every,
                       Int32GetDatum(setup.ahead),
                       Int64GetDatum(last_id)};
    const uint64 rows = run_as_owner(report, owner, statement, 7, types, values, nullptr, false);
    if (rows > static_cast<uint64>(kMaxBoundaries)) {
        return -1;
    }
    *boundary_ids = static_cast<int64 *>(palloc(sizeof(int64) * rows));
    *starts = static_cast<snowflake::PeriodStart *>(palloc(sizeof(snowflake::PeriodStart) * rows));
    for (uint64 i = 0; i < rows; i++) {
        HeapTuple row = SPI_tuptable->vals[i];
        const TupleDesc description = SPI_tuptable->tupdesc;
        bool is_null = true;
        (*boundary_ids)[i] = DatumGetInt64(SPI_getbinval(row, description, 1, &is_null));
        int fields[6];
        for (int f = 0; f < 6; f++) {
            fields[f] = DatumGetInt32(SPI_getbinval(row, description, f + 2, &is_null));
        }
        (*starts)[i] = {fields[0], fields[1], fields[2], fields[3], fields[4], fields[5]};
    }
    return static_cast<int>(rows);
}

}  // namespace snowflake_partitions

namespace {

// The timestamptz of a boundary's first id.
Datum boundary_time(int64 id) {
    return TimestampTzGetDatum(snowflake::pg_us_from_unix_ms(snowflake::decode(id).parts.unix_ms));
}

}  // namespace

// The periods that snowflake_partition_table() would make for an interval and a time zone from
// the one that holds since through the one that holds until, computed as maintenance computes
// them, so that a boundary can be checked (or a setup foreseen) without a table.
extern "C" Datum snowflake_partition_boundaries(PG_FUNCTION_ARGS) {
    using namespace snowflake_partitions;
    constexpr char kName[] = "snowflake_partition_boundaries()";
    Setup setup{};
    setup.every = PG_GETARG_DATUM(0);
    setup.unit = unit_of_argument(setup.every, kName);
    setup.time_zone = text_to_cstring(PG_GETARG_TEXT_PP(1));
    const TimestampTz since = PG_GETARG_TIMESTAMPTZ(2);
    const TimestampTz until = PG_GETARG_TIMESTAMPTZ(3);
    if (TIMESTAMP_NOT_FINITE(since) || TIMESTAMP_NOT_FINITE(until) || until < since) {
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("%s needs finite times, since no later than until", kName),
                        errhint("Pass since and until such as now() and now() + interval "
                                "'1 year'.")));
    }
    InitMaterializedSRF(fcinfo, 0);
    const auto *result = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);
    const int guc_nest_level = pin_search_path();
    SPI_connect();
    const Extension extension = find_extension();
    refuse_unnamed_zone(setup.time_zone);
    const int64 first_id =
        snowflake::min_id_at_or_after(snowflake::unix_ms_floor_from_pg_us(since));
    const int64 last_id = snowflake::min_id_at_or_after(snowflake::unix_ms_floor_from_pg_us(until));
    // Two periods past until, so that the series holds the end of the period that holds it.
    const TimestampTz series_end = DatumGetTimestampTz(
        DirectFunctionCall2(timestamptz_pl_interval, TimestampTzGetDatum(until),
                            DirectFunctionCall2(interval_mul, setup.every, Float8GetDatum(2.0))));
    const int64 series_end_id =
        snowflake::min_id_at_or_after(snowflake::unix_ms_floor_from_pg_us(series_end));
    int64 *boundaries = nullptr;
    snowflake::PeriodStart *starts = nullptr;
    const Report report{nullptr, nullptr, kName};
    const int count = compute_boundaries(report, extension, setup, GetUserId(), first_id,
                                         series_end_id, since, &boundaries, &starts);
    if (count < 0) {
        ereport(ERROR,
                (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
                 errmsg("%s would need more than %d partition boundaries", kName, kMaxBoundaries),
                 errhint("Ask for a shorter span of time, or a longer interval.")));
    }
    for (int period = 0; period + 1 < count; period++) {
        if (boundaries[period + 1] <= first_id ||
            (boundaries[period] >= last_id && boundaries[period] > first_id)) {
            continue;
        }
        char suffix[snowflake::kPartitionSuffixSize];
        (void)snowflake::partition_suffix(setup.unit, starts[period], suffix, sizeof(suffix));
        Datum values[3];
        bool nulls[3] = {};
        int i = 0;
        values[i++] = boundary_time(boundaries[period]);
        values[i++] = boundary_time(boundaries[period + 1]);
        values[i++] = CStringGetTextDatum(suffix);
        Assert(i == 3);
        tuplestore_putvalues(result->setResult, result->setDesc, values, nulls);
    }
    SPI_finish();
    unpin_search_path(guc_nest_level);
    return static_cast<Datum>(0);
}

// The core's table of intervals, as SQL reads it: the one list behind every message and comment.
extern "C" Datum snowflake_partition_intervals(PG_FUNCTION_ARGS) {
    InitMaterializedSRF(fcinfo, 0);
    const auto *result = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);
    for (const snowflake::PartitionInterval &row : snowflake::kPartitionIntervals) {
        auto *every = static_cast<Interval *>(palloc0(sizeof(Interval)));
        every->month = row.months;
        every->day = row.days;
        every->time = row.microseconds;
        Datum values[2] = {IntervalPGetDatum(every), CStringGetTextDatum(row.suffix_example)};
        bool nulls[2] = {false, false};
        tuplestore_putvalues(result->setResult, result->setDesc, values, nulls);
    }
    return static_cast<Datum>(0);
}
