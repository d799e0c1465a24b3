// The clock beside time partitions (partition_clock.hpp). The generator refuses to follow a clock
// back; the retention must not follow one forward that no key has followed. So the retention
// counts back from the earlier of now and the newest key, and says so when that keeps what the
// clock alone would expire. Once keys follow the clock, the gap in the partitions that its step
// left still parts the rows made before it from now, and the retention removes nothing across
// it. Times are written in ISO form in the session's time zone, a gap's in the table's.

extern "C" {
#include "postgres.h"

#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "pgtime.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/lsyscache.h"
#include "utils/rls.h"
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

// An instant in ISO form in the table's time zone (a name of pg_timezone_names), which names its
// partitions' periods, whatever the session's; in the session's if the zone cannot be loaded.
const char *zone_time_text(TimestampTz instant, const char *time_zone) {
    pg_tz *zone = pg_tzset(time_zone);
    struct pg_tm fields;
    fsec_t fraction = 0;
    int offset = 0;
    const char *abbreviation = nullptr;
    if (zone == nullptr ||
        timestamp2tm(instant, &offset, &fields, &fraction, &abbreviation, zone) != 0) {
        return time_text(instant);
    }
    char text[MAXDATELEN + 1];
    EncodeDateTime(&fields, fraction, true, offset, abbreviation, USE_ISO_DATES, text);
    return pstrdup(text);
}

// The gap's start (the end of the newest partition before it) and end (the start of the run
// after it) in the table's time zone.
void gap_times(const snowflake::SeriesGap &gap, const char *time_zone, const char **start,
               const char **end) {
    *start = zone_time_text(key_time(gap.lower), time_zone);
    *end = zone_time_text(snowflake::pg_us_from_unix_ms(snowflake::first_whole_ms(gap.upper)),
                          time_zone);
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

// A table whose policies apply to its owner (FORCE ROW LEVEL SECURITY) hides rows from the read
// of its newest key, which runs with row_security off and would fail: the retention is skipped,
// loudly, and the rest of the maintenance goes on, so that inserts keep their partitions.
bool retention_hidden_by_policies(Oid parent, Oid owner) {
    if (check_enable_rls(parent, owner, true) != RLS_ENABLED) {
        return false;
    }
    ereport(WARNING,
            (errmsg("the retention of %s is skipped: row-level security applies to its owner",
                    table_text(parent)),
             errdetail("The retention reads the table's newest key as its owner, and a policy "
                       "could hide it. Partitions are still created; none is detached."),
             errhint("Let the owner see every row of the table (ALTER TABLE %s NO FORCE ROW "
                     "LEVEL SECURITY), or detach expired partitions by hand.",
                     table_text(parent))));
    return true;
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

// The partitions this run created count, so that a gap they close is none.
snowflake::SeriesGap gap_before_now(const snowflake::IdRange *found, int found_count,
                                    const int64 *boundaries, int boundary_count,
                                    const bool *created, size_t current_period) {
    auto *series = static_cast<snowflake::IdRange *>(
        palloc(sizeof(snowflake::IdRange) * (found_count + boundary_count)));
    size_t count = 0;
    for (int i = 0; i < found_count; i++) {
        series[count++] = found[i];
    }
    for (int period = 0; period + 1 < boundary_count; period++) {
        if (created[period]) {
            series[count++] = snowflake::IdRange{boundaries[period], boundaries[period + 1]};
        }
    }
    snowflake::sort_ranges(series, count);
    return snowflake::gap_before(series, count, boundaries[current_period]);
}

// The gap is named in each row, so that the report alone says why.
const char *kept_before_gap(const snowflake::SeriesGap &gap, const char *time_zone) {
    const char *start = nullptr;
    const char *end = nullptr;
    gap_times(gap, time_zone, &start, &end);
    return psprintf("kept (a gap in the partitions from %s to %s lies between it and now)", start,
                    end);
}

// A WARNING reaches the server's log, which a scheduled run's notices do not. The hint offers
// only what is safe once the clock is known to be right.
void warn_kept_before_gap(Oid parent, int kept, const snowflake::SeriesGap &gap,
                          const char *time_zone, const char *unit_name) {
    const char *start = nullptr;
    const char *end = nullptr;
    gap_times(gap, time_zone, &start, &end);
    ereport(WARNING,
            (errmsg_plural("the retention of %s keeps %d partition before a gap in its partitions",
                           "the retention of %s keeps %d partitions before a gap in its partitions",
                           kept, table_text(parent), kept),
             errdetail("No partition holds the time from %s to %s. A step of the clock ahead, or "
                       "a stop of maintenance, leaves such a gap when the clock passes the end of "
                       "the partitions made ahead by a whole %s or more. The retention removes "
                       "nothing across it: the rows before it may be the only ones made at the "
                       "right clock.",
                       start, end, unit_name),
             errhint("Check the server's clock first. If it is right, call "
                     "snowflake_partition_table() again with the table's setup: it creates the "
                     "missing partitions from its oldest row on, and the retention goes on. Or "
                     "detach and drop each partition before the gap by hand (ALTER TABLE %s "
                     "DETACH PARTITION ..., then DROP TABLE ...).",
                     table_text(parent))));
}
