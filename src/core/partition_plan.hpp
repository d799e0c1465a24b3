// The rules of time partitions keyed by Snowflake ids (doc/reference.md "Time partitions"): which
// intervals make partitions, how a partition is named from its start, whether existing partitions
// line up with the boundaries, which periods lack a partition, where a gap lies before now and
// which have expired. Pure C++17: the glue computes the boundaries with PostgreSQL's own time-zone
// arithmetic.
#pragma once

#include <cstddef>
#include <cstdint>

namespace snowflake {

// The intervals a table can be partitioned by (kPartitionIntervals).
enum class PartitionUnit { kHour, kDay, kWeek, kMonth, kQuarter, kYear };

// One interval a table can be partitioned by: as PostgreSQL stores it, as a setup names it, the
// field of date_trunc() that starts its periods, and the suffix that names one of them.
struct PartitionInterval {
    PartitionUnit unit;
    int32_t months;
    int32_t days;
    int64_t microseconds;
    const char *text;
    const char *trunc_field;
    const char *suffix_example;
};

// Every interval, shortest first. Messages, hints, the SQL function
// snowflake_partition_intervals() and so the comments and docs that name it are made from this
// table alone, so that a new interval is one more row here (and its name in partition_suffix()).
inline constexpr PartitionInterval kPartitionIntervals[] = {
    {PartitionUnit::kHour, 0, 0, int64_t{3600} * 1000 * 1000, "1 hour", "hour", "_p2026_12_01_13"},
    {PartitionUnit::kDay, 0, 1, 0, "1 day", "day", "_p2026_12_01"},
    {PartitionUnit::kWeek, 0, 7, 0, "1 week", "week", "_p2026w49"},
    {PartitionUnit::kMonth, 1, 0, 0, "1 month", "month", "_p2026_12"},
    {PartitionUnit::kQuarter, 3, 0, 0, "3 months", "quarter", "_p2026q4"},
    {PartitionUnit::kYear, 12, 0, 0, "1 year", "year", "_p2026"},
};
inline constexpr size_t kPartitionIntervalCount =
    sizeof(kPartitionIntervals) / sizeof(kPartitionIntervals[0]);

// The unit of an interval given as PostgreSQL stores it (months, days, microseconds); false for
// an interval the table does not hold.
bool partition_unit_of(int32_t months, int32_t days, int64_t microseconds, PartitionUnit *unit);

// The table's row of a unit.
const PartitionInterval &partition_interval(PartitionUnit unit);

// The name of the unit for date_trunc(): "hour", "day", "week", "month", "quarter" or "year".
const char *partition_unit_name(PartitionUnit unit);

// Writes every interval of the table for a message, each between quote and quote, the last after
// " or ": "1 hour, 1 day, ... or 1 year"; returns its length, cut to fit size.
size_t partition_interval_list(const char *quote, char *out, size_t size);

// Room enough for what partition_interval_list() writes with quotes of one character.
inline constexpr size_t kPartitionIntervalListSize = 128;

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

// Writes the suffix that names a partition by its start (kPartitionIntervals shows one of each:
// an hour is named by its start in UTC, a week by its ISO year and week); returns its length.
size_t partition_suffix(PartitionUnit unit, const PeriodStart &start, char *out, size_t size);

// Length of the tag partition_name_tag() writes, with its terminating zero.
inline constexpr size_t kPartitionNameTagSize = 10;

// Writes the tag that keeps the partition names of a parent whose name is cut apart from another
// parent's that begins alike: _ and eight hex digits of a hash of the parent's whole name
// (FNV-1a), the same in every cluster, so that a restored table's later partitions are named as
// its earlier ones were.
void partition_name_tag(const char *parent_name, size_t length, char *out, size_t size);

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

// The instant the retention counts back from, in PostgreSQL's microseconds since 2000.
struct RetentionBasis {
    int64_t pg_us;
    bool is_newest_key;  // the newest key's millisecond, which is earlier than now
};

// The earlier of now and the millisecond of the table's newest key, so that a clock ahead of
// every key expires nothing that the keys do not; now alone for a table without a key.
RetentionBasis retention_basis(int64_t now_pg_us, bool has_key, int64_t newest_key);

// A gap in a table's partitions: ids from the end of one partition to the start of the next,
// which no partition holds.
struct SeriesGap {
    bool found;
    int64_t lower;  // the upper bound of the newest partition before the gap
    int64_t upper;  // the lower bound of the oldest partition of the run after it
};

// Sorts ranges by their lower bound, as gap_before() takes them.
void sort_ranges(IdRange *ranges, size_t count);

// The gap nearest before the current period, whose first id is current_lower: going back from
// there through partitions that meet, the first place where the next older partition ends before
// the newer one starts. series holds every partition of the table, sorted by lower bound, each
// spanning one period (check_ranges). Not found when the partitions meet all the way back to the
// oldest, or when none starts before the current period.
SeriesGap gap_before(const IdRange *series, size_t count, int64_t current_lower);

// Whether a partition lies before the gap, where the retention must not reach it.
bool lies_before(const IdRange &range, const SeriesGap &gap);

// What the retention does with a partition.
enum class Expiry {
    kKept,       // newer than the retention by the clock
    kExpired,    // older than the retention counted back from its basis
    kHeldBack,   // older by the clock alone, but not by the newest key
    kBeforeGap,  // older than the retention, but a gap lies between it and the current period
};

// The partition's fate, from the first id of the retention's start by the clock alone, from its
// basis (retention_basis), which is never later, and from the gap before the current period
// (gap_before), across which nothing expires.
Expiry expiry_of(const IdRange &range, int64_t clock_start_id, int64_t retention_start_id,
                 const SeriesGap &gap);

// The Unix milliseconds from which every id of a partition is inside its range: the first whole
// millisecond at or after its lower bound (the epoch for a bound at or below id 0).
int64_t first_whole_ms(int64_t lower_id);

// The Unix millisecond at which a partition's range ends: the millisecond of its upper bound,
// which the range no longer holds whole (the epoch for a bound at or below id 0).
int64_t end_ms(int64_t upper_id);

// A hash partition's bound: rows whose key hashes to remainder modulo modulus go into it.
struct HashBound {
    int32_t modulus;
    int32_t remainder;
};

// Whether hash partitions take every row: every remainder modulo the largest modulus is some
// partition's remainder modulo its own (PostgreSQL requires each modulus to divide the larger
// ones). A largest modulus above limit is answered false, without checking each remainder.
bool hash_bounds_cover(const HashBound *bounds, size_t count, int32_t limit);

// Whether a table's text as pg_dump writes it (regclass's output) names no table: a bare number,
// spaces around it allowed, is what it writes for an OID of no relation, and "-" for OID 0.
bool names_no_table(const char *text);

}  // namespace snowflake
