// The clock beside time partitions (partition_clock.hpp). The generator refuses to follow a clock
// back; the retention must not follow one forward that no key has followed. So the retention
// counts back from the earlier of now and the newest key, and says so when that keeps what the
// clock alone would expire. Times are written in ISO form in the session's time zone.

extern "C" {
#include "postgres.h"

#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"
}

#include "core/partition_plan.hpp"
#include "pg/as_owner.hpp"
#include "pg/id_bounds.hpp"
#include "pg/object_names.hpp"
#include "pg/partitions/partition_clock.hpp"

namespace {

// An instant in ISO form, whatever the session's DateStyle, in its time zone.
const char *time_text(TimestampTz instant) {
    return pstrdup(timestamptz_to_str(instant));
}

// A count and its unit, the unit plural unless the count is one.
void append_count(StringInfo text, int count, const char *unit) {
    appendStringInfo(text, "%d %s%s ", count, unit, count == 1 ? "" : "s");
}

// How long from earlier to later as age() counts it, in years, months, days and whole seconds,
// whatever the session's IntervalStyle.
const char *age_text(TimestampTz later, TimestampTz earlier) {
    const Interval *age = DatumGetIntervalP(DirectFunctionCall2(
        timestamptz_age, TimestampTzGetDatum(later), TimestampTzGetDatum(earlier)));
    StringInfoData text;
    initStringInfo(&text);
    const int counts[3] = {age->month / 12, age->month % 12, age->day};
    const char *units[3] = {"year", "month", "day"};
    for (int i = 0; i < 3; i++) {
        if (counts[i] != 0) {
            append_count(&text, counts[i], units[i]);
        }
    }
    const int64 seconds = age->time / USECS_PER_SEC;
    appendStringInfo(&text, "%02d:%02d:%02d", static_cast<int>(seconds / SECS_PER_HOUR),
                     static_cast<int>(seconds / SECS_PER_MINUTE % 60),
                     static_cast<int>(seconds % SECS_PER_MINUTE));
    return text.data;
}

// The instant a key's millisecond starts.
TimestampTz key_time(int64 key) {
    return snowflake::pg_us_from_unix_ms(snowflake::end_ms(key));
}

}  // namespace

// min() or max() of the key, which the planner answers from an index on it where there is one.
bool read_key_end(Oid parent, Oid owner, AttrNumber key_attnum, const char *function_name,
                  KeyEnd end, int64 *key) {
    const char *statement =
        psprintf("SELECT pg_catalog.%s(%s)::bigint FROM %s", end == KeyEnd::kOldest ? "min" : "max",
                 quote_identifier(get_attname(parent, key_attnum, false)), table_text(parent));
    run_statement_as({owner, function_name, statement, true}, statement);
    bool is_null = true;
    *key = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &is_null));
    return !is_null;
}

// The interval is subtracted as PostgreSQL subtracts it, months and days in the session's zone.
int64 retention_start_id(TimestampTz from, Datum retain) {
    return snowflake_min_id_at(DatumGetTimestampTz(
        DirectFunctionCall2(timestamptz_mi_interval, TimestampTzGetDatum(from), retain)));
}

// A WARNING reaches the server's log, which a scheduled run's notices do not.
void warn_held_back(Oid parent, int held_back, TimestampTz now, int64 newest_key) {
    const TimestampTz newest = key_time(newest_key);
    ereport(WARNING,
            (errmsg_plural("the retention of %s keeps %d partition that the clock alone would "
                           "expire",
                           "the retention of %s keeps %d partitions that the clock alone would "
                           "expire",
                           held_back, table_text(parent), held_back),
             errdetail("The clock reads %s, %s after the newest key, which is from %s. By the "
                       "clock alone, every row would be older than the retention. The retention "
                       "counts back from the earlier of the two, so that a clock ahead removes no "
                       "row that the keys do not.",
                       time_text(now), age_text(now, newest), time_text(newest)),
             errhint("Check the server's clock first. If it is right, no row has come for longer "
                     "than the retention: the partitions go once newer rows come, or detach them "
                     "by hand.")));
}

// The clock before the partitions is named by the start of the oldest, after them by the end of
// the newest.
void refuse_clock_far(Oid parent, int max_boundaries, TimestampTz now,
                      const snowflake::IdRange &span) {
    const TimestampTz start = snowflake::pg_us_from_unix_ms(snowflake::first_whole_ms(span.lower));
    const TimestampTz end = snowflake::pg_us_from_unix_ms(snowflake::end_ms(span.upper));
    const bool ahead = now >= end;
    ereport(
        ERROR,
        (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
         ahead ? errmsg("the clock reads %s, %s after the end of the newest partition of %s, "
                        "which would need more than %d partition boundaries",
                        time_text(now), age_text(now, end), table_text(parent), max_boundaries)
               : errmsg("the clock reads %s, %s before the start of the oldest partition of "
                        "%s, which would need more than %d partition boundaries",
                        time_text(now), age_text(start, now), table_text(parent), max_boundaries),
         errdetail("Maintenance computes every boundary between the partitions and the "
                   "clock's period, to check that the partitions line up. The partitions "
                   "alone span %s to %s.",
                   time_text(start), time_text(end)),
         errhint("Check the server's clock first. If it is right, detach the partitions far "
                 "from now, or set the table up again with a longer interval.")));
}
