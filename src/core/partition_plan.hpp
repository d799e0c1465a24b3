// The rules of time partitions keyed by Snowflake ids (doc/reference.md "Time partitions"): which
// intervals make partitions, how a partition is named from its start, whether existing partitions
// line up with the boundaries, which periods lack a partition and which have expired. Pure
// C++17: the glue computes the boundaries with PostgreSQL's own time-zone arithmetic.
#pragma once

#include <cstddef>
#include <cstdint>

namespace snowflake {

// The intervals a table can be partitioned by: one hour, day, week or month.
enum class PartitionUnit { kHour, kDay, kWeek, kMonth };

// The unit of an interval given as PostgreSQL stores it (months, days, microseconds); false for
// any other interval.
bool partition_unit_of(int32_t months, int32_t days, int64_t microseconds, PartitionUnit *unit);

// The name of the unit for date_trunc(): "hour", "day", "week" or "month".
const char *partition_unit_name(PartitionUnit unit);

// The local time fields of a partition's start (hourly partitions: of its start in UTC).
struct PeriodStart {
    int year;
    int month;
    int day;
    int hour;
    int iso_year;
    int iso_week;
};

// Longest suffix partition_suffix() writes, with its terminating zero.
inline constexpr size_t kPartitionSuffixSize = 32;

// Writes the suffix that names a partition by its start: _p2026_12 (month), _p2026_12_01 (day),
// _p2026_12_01_13 (hour), _p2026w49 (ISO week); returns its length.
size_t partition_suffix(PartitionUnit unit, const PeriodStart &start, char *out, size_t size);

// A partition's range of ids, lower bound included, upper bound excluded.
struct IdRange {
    int64_t lower;
    int64_t upper;
};

// Whether existing partitions line up: each must span exactly one period between consecutive
// boundaries, and no two the same one.
enum class RangeFit { kAligned, kMisaligned, kOverlapping };
struct RangeCheck {
    RangeFit fit;
    size_t culprit;  // the index in existing of the first partition that does not fit
};

// Checks existing partitions (in any order) against boundaries sorted ascending.
RangeCheck check_ranges(const IdRange *existing, size_t existing_count, const int64_t *boundaries,
                        size_t boundary_count);

// Marks missing[i] for each period i (from boundaries[i] to boundaries[i + 1]) from first up to
// (not including) last that no existing partition starts; returns how many are missing. missing
// has boundary_count - 1 entries; those outside [first, last) are left false.
size_t missing_periods(const IdRange *existing, size_t existing_count, const int64_t *boundaries,
                       size_t boundary_count, size_t first, size_t last, bool *missing);

// The index of the period that holds id: the last i with boundaries[i] <= id, at most
// boundary_count - 2 (the last period), 0 for an id before the first boundary.
size_t period_of(const int64_t *boundaries, size_t boundary_count, int64_t id);

// Whether a partition's whole range is older than the retention: every id it can hold is below
// the first id of the retention's start.
bool is_expired(const IdRange &range, int64_t retention_start_id);

// Whether a table's text as pg_dump writes it (regclass's output) names no table: a bare number,
// spaces around it allowed, is what it writes for an OID of no relation, and "-" for OID 0.
bool names_no_table(const char *text);

}  // namespace snowflake
