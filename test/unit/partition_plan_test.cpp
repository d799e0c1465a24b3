// Naming partitions, checking existing ranges against boundaries, what is missing or expired, and
// the gap before now across which nothing expires.

#include "core/partition_plan.hpp"

#include "core/codec.hpp"
#include "core/layout.hpp"

#include <gtest/gtest.h>

#include <cstring>

namespace snowflake {
namespace {

constexpr int64_t kBoundaries[] = {100, 200, 300, 400, 500};
constexpr size_t kBoundaryCount = sizeof(kBoundaries) / sizeof(kBoundaries[0]);

TEST(PartitionUnit, AcceptsTheIntervalsOfTheTableOnly) {
    PartitionUnit unit = PartitionUnit::kDay;
    EXPECT_TRUE(partition_unit_of(1, 0, 0, &unit));
    EXPECT_EQ(unit, PartitionUnit::kMonth);
    EXPECT_TRUE(partition_unit_of(0, 7, 0, &unit));
    EXPECT_EQ(unit, PartitionUnit::kWeek);
    EXPECT_TRUE(partition_unit_of(0, 1, 0, &unit));
    EXPECT_EQ(unit, PartitionUnit::kDay);
    EXPECT_TRUE(partition_unit_of(0, 0, int64_t{3600} * 1000000, &unit));
    EXPECT_EQ(unit, PartitionUnit::kHour);
    EXPECT_TRUE(partition_unit_of(3, 0, 0, &unit));
    EXPECT_EQ(unit, PartitionUnit::kQuarter);
    EXPECT_TRUE(partition_unit_of(12, 0, 0, &unit));
    EXPECT_EQ(unit, PartitionUnit::kYear);
    EXPECT_FALSE(partition_unit_of(0, 0, int64_t{86400} * 1000000, &unit));  // '24 hours'
    EXPECT_FALSE(partition_unit_of(2, 0, 0, &unit));
    EXPECT_FALSE(partition_unit_of(6, 0, 0, &unit));
    EXPECT_FALSE(partition_unit_of(0, 2, 0, &unit));
    EXPECT_FALSE(partition_unit_of(1, 1, 0, &unit));
    EXPECT_FALSE(partition_unit_of(0, 0, 1800 * int64_t{1000000}, &unit));
    EXPECT_FALSE(partition_unit_of(0, 0, 0, &unit));
    EXPECT_FALSE(partition_unit_of(-1, 0, 0, &unit));
}

// The table is indexed by its units, and each row reads back as its own unit.
TEST(PartitionUnit, EveryRowIsItsUnitsRow) {
    for (size_t i = 0; i < kPartitionIntervalCount; i++) {
        const PartitionInterval &row = kPartitionIntervals[i];
        EXPECT_EQ(static_cast<size_t>(row.unit), i);
        EXPECT_EQ(&partition_interval(row.unit), &row);
        PartitionUnit unit = PartitionUnit::kHour;
        EXPECT_TRUE(partition_unit_of(row.months, row.days, row.microseconds, &unit));
        EXPECT_EQ(unit, row.unit);
        EXPECT_STREQ(partition_unit_name(row.unit), row.trunc_field);
    }
}

TEST(PartitionUnit, ListsEveryIntervalForAMessage) {
    char list[kPartitionIntervalListSize];
    const size_t length = partition_interval_list("'", list, sizeof(list));
    EXPECT_STREQ(list, "'1 hour', '1 day', '1 week', '1 month', '3 months' or '1 year'");
    EXPECT_EQ(length, std::strlen(list));
    partition_interval_list("", list, sizeof(list));
    EXPECT_STREQ(list, "1 hour, 1 day, 1 week, 1 month, 3 months or 1 year");
    char small[10];
    EXPECT_EQ(partition_interval_list("", small, sizeof(small)), 9u);
    EXPECT_STREQ(small, "1 hour, 1");
}

TEST(PartitionSuffix, SaysTheTimeRange) {
    const PeriodStart start{2026, 12, 1, 13, 2026, 49};
    char suffix[kPartitionSuffixSize];
    EXPECT_EQ(partition_suffix(PartitionUnit::kMonth, start, suffix, sizeof(suffix)), 9u);
    EXPECT_STREQ(suffix, "_p2026_12");
    partition_suffix(PartitionUnit::kDay, start, suffix, sizeof(suffix));
    EXPECT_STREQ(suffix, "_p2026_12_01");
    partition_suffix(PartitionUnit::kHour, start, suffix, sizeof(suffix));
    EXPECT_STREQ(suffix, "_p2026_12_01_13");
    // The ISO year of a week may differ from the calendar year of its Monday.
    partition_suffix(PartitionUnit::kWeek, {2024, 12, 30, 0, 2025, 1}, suffix, sizeof(suffix));
    EXPECT_STREQ(suffix, "_p2025w01");
    partition_suffix(PartitionUnit::kQuarter, {2026, 10, 1, 0, 2026, 40}, suffix, sizeof(suffix));
    EXPECT_STREQ(suffix, "_p2026q4");
    partition_suffix(PartitionUnit::kQuarter, {2026, 1, 1, 0, 2026, 1}, suffix, sizeof(suffix));
    EXPECT_STREQ(suffix, "_p2026q1");
    partition_suffix(PartitionUnit::kYear, {2026, 1, 1, 0, 2026, 1}, suffix, sizeof(suffix));
    EXPECT_STREQ(suffix, "_p2026");
}

// Each row's example is the name partition_suffix() gives the period that holds 2026-12-01
// 13:00 (in ISO week 49).
TEST(PartitionSuffix, TheTablesExamplesAreItsNames) {
    const PeriodStart start{2026, 12, 1, 13, 2026, 49};
    for (const PartitionInterval &row : kPartitionIntervals) {
        char suffix[kPartitionSuffixSize];
        partition_suffix(row.unit, start, suffix, sizeof(suffix));
        EXPECT_STREQ(suffix, row.suffix_example) << row.text;
    }
}

TEST(CheckRanges, AcceptsPartitionsOfWholePeriodsInAnyOrder) {
    const IdRange existing[] = {{300, 400}, {100, 200}};
    EXPECT_EQ(check_ranges(existing, 2, kBoundaries, kBoundaryCount).fit, RangeFit::kAligned);
    EXPECT_EQ(check_ranges(nullptr, 0, kBoundaries, kBoundaryCount).fit, RangeFit::kAligned);
}

TEST(CheckRanges, NamesThePartitionThatDoesNotLineUp) {
    const IdRange off_start[] = {{100, 200}, {150, 200}};
    RangeCheck check = check_ranges(off_start, 2, kBoundaries, kBoundaryCount);
    EXPECT_EQ(check.fit, RangeFit::kMisaligned);
    EXPECT_EQ(check.culprit, 1u);
    const IdRange two_periods[] = {{100, 300}};
    check = check_ranges(two_periods, 1, kBoundaries, kBoundaryCount);
    EXPECT_EQ(check.fit, RangeFit::kMisaligned);
    EXPECT_EQ(check.culprit, 0u);
    const IdRange past_the_end[] = {{500, 600}};
    EXPECT_EQ(check_ranges(past_the_end, 1, kBoundaries, kBoundaryCount).fit,
              RangeFit::kMisaligned);
    const IdRange twice[] = {{200, 300}, {200, 300}};
    check = check_ranges(twice, 2, kBoundaries, kBoundaryCount);
    EXPECT_EQ(check.fit, RangeFit::kOverlapping);
    EXPECT_EQ(check.culprit, 1u);
}

TEST(MissingPeriods, FromTheFirstPeriodUpToTheLast) {
    const IdRange existing[] = {{200, 300}};
    bool missing[kBoundaryCount - 1];
    EXPECT_EQ(missing_periods(existing, 1, kBoundaries, kBoundaryCount, 1, 4, missing), 2u);
    EXPECT_FALSE(missing[0]);  // before first: a gap in the past is left alone
    EXPECT_FALSE(missing[1]);
    EXPECT_TRUE(missing[2]);
    EXPECT_TRUE(missing[3]);
    // A hand-made partition further ahead than the setup asks: the periods up to it stay empty.
    const IdRange far_ahead[] = {{400, 500}};
    EXPECT_EQ(missing_periods(far_ahead, 1, kBoundaries, kBoundaryCount, 0, 2, missing), 2u);
    EXPECT_TRUE(missing[0]);
    EXPECT_TRUE(missing[1]);
    EXPECT_FALSE(missing[2]);
    EXPECT_FALSE(missing[3]);
    const IdRange all[] = {{100, 200}, {200, 300}, {300, 400}, {400, 500}};
    EXPECT_EQ(missing_periods(all, 4, kBoundaries, kBoundaryCount, 0, 4, missing), 0u);
}

TEST(PeriodOf, TheLastBoundaryAtOrBeforeTheId) {
    EXPECT_EQ(period_of(kBoundaries, kBoundaryCount, 100), 0u);
    EXPECT_EQ(period_of(kBoundaries, kBoundaryCount, 199), 0u);
    EXPECT_EQ(period_of(kBoundaries, kBoundaryCount, 200), 1u);
    EXPECT_EQ(period_of(kBoundaries, kBoundaryCount, 450), 3u);
    EXPECT_EQ(period_of(kBoundaries, kBoundaryCount, 50), 0u);
    EXPECT_EQ(period_of(kBoundaries, kBoundaryCount, 900), 3u);
}

TEST(IsExpired, OnlyWhenTheWholeRangeIsOlder) {
    EXPECT_TRUE(is_expired({100, 200}, 200));
    EXPECT_TRUE(is_expired({100, 200}, 250));
    EXPECT_FALSE(is_expired({100, 200}, 199));
}

TEST(RetentionBasis, TheEarlierOfNowAndTheNewestKey) {
    constexpr int64_t kMs = int64_t{1} << kTimestampShift;
    // An id of 5 ms after the epoch, sequence 7, and the instant of that millisecond.
    const int64_t key = 5 * kMs + 7;
    const int64_t key_pg_us = pg_us_from_unix_ms(kEpochUnixMs + 5);
    // A clock a day ahead of the key: the key's millisecond.
    RetentionBasis basis = retention_basis(key_pg_us + int64_t{86400} * 1000000, true, key);
    EXPECT_EQ(basis.pg_us, key_pg_us);
    EXPECT_TRUE(basis.is_newest_key);
    // A key from a clock ahead of now: now.
    basis = retention_basis(key_pg_us - 1, true, key);
    EXPECT_EQ(basis.pg_us, key_pg_us - 1);
    EXPECT_FALSE(basis.is_newest_key);
    // Now within the key's millisecond, and exactly at its start: now.
    basis = retention_basis(key_pg_us + 999, true, key);
    EXPECT_EQ(basis.pg_us, key_pg_us);
    EXPECT_TRUE(basis.is_newest_key);
    basis = retention_basis(key_pg_us, true, key);
    EXPECT_EQ(basis.pg_us, key_pg_us);
    EXPECT_FALSE(basis.is_newest_key);
    // No key: now, however far ahead.
    basis = retention_basis(key_pg_us + int64_t{86400} * 1000000, false, 0);
    EXPECT_EQ(basis.pg_us, key_pg_us + int64_t{86400} * 1000000);
    EXPECT_FALSE(basis.is_newest_key);
}

constexpr SeriesGap kNoGap{false, 0, 0};

TEST(ExpiryOf, HeldBackOnlyWhatTheClockAloneWouldExpire) {
    // The clock's start at 300, the newest key's at 200.
    EXPECT_EQ(expiry_of({100, 200}, 300, 200, kNoGap), Expiry::kExpired);
    EXPECT_EQ(expiry_of({200, 300}, 300, 200, kNoGap), Expiry::kHeldBack);
    EXPECT_EQ(expiry_of({300, 400}, 300, 200, kNoGap), Expiry::kKept);
    // Without a newer key the two starts are one.
    EXPECT_EQ(expiry_of({200, 300}, 300, 300, kNoGap), Expiry::kExpired);
    EXPECT_EQ(expiry_of({300, 400}, 300, 300, kNoGap), Expiry::kKept);
}

TEST(ExpiryOf, NothingExpiresAcrossAGap) {
    // No partition from 300 to 400: the one from 200 to 300 lies before the gap.
    const SeriesGap gap{true, 300, 400};
    EXPECT_EQ(expiry_of({200, 300}, 500, 500, gap), Expiry::kBeforeGap);
    EXPECT_EQ(expiry_of({100, 200}, 500, 500, gap), Expiry::kBeforeGap);
    // After the gap the retention works as before.
    EXPECT_EQ(expiry_of({400, 500}, 500, 500, gap), Expiry::kExpired);
    EXPECT_EQ(expiry_of({500, 600}, 500, 500, gap), Expiry::kKept);
    // What the newest key keeps is reported as such, and what neither expires is kept.
    EXPECT_EQ(expiry_of({200, 300}, 500, 200, gap), Expiry::kHeldBack);
    EXPECT_EQ(expiry_of({200, 300}, 300, 300, gap), Expiry::kBeforeGap);
    EXPECT_EQ(expiry_of({200, 300}, 250, 250, gap), Expiry::kKept);
}

// Partitions of kBoundaries (100 to 500) and of 600 to 700 and 700 to 800, as a clock that
// stepped past 500 and 600 leaves them.
constexpr IdRange kStepped[] = {{100, 200}, {200, 300}, {300, 400}, {600, 700}, {700, 800}};
constexpr size_t kSteppedCount = sizeof(kStepped) / sizeof(kStepped[0]);

TEST(SortRanges, ByLowerBound) {
    IdRange ranges[] = {{600, 700}, {100, 200}, {700, 800}, {300, 400}, {200, 300}};
    sort_ranges(ranges, kSteppedCount);
    for (size_t i = 0; i < kSteppedCount; i++) {
        EXPECT_EQ(ranges[i].lower, kStepped[i].lower);
        EXPECT_EQ(ranges[i].upper, kStepped[i].upper);
    }
    sort_ranges(ranges, 0);
}

TEST(GapBefore, TheNearestHoleBeforeTheCurrentPeriod) {
    // The current period starts at 600: the hole from 400 to 600 lies before it.
    SeriesGap gap = gap_before(kStepped, kSteppedCount, 600);
    EXPECT_TRUE(gap.found);
    EXPECT_EQ(gap.lower, 400);
    EXPECT_EQ(gap.upper, 600);
    EXPECT_TRUE(lies_before(kStepped[0], gap));
    EXPECT_TRUE(lies_before(kStepped[2], gap));
    EXPECT_FALSE(lies_before(kStepped[3], gap));
    EXPECT_FALSE(lies_before(kStepped[4], gap));
    // The current period at 700: the run back from it still ends at 600.
    gap = gap_before(kStepped, kSteppedCount, 700);
    EXPECT_TRUE(gap.found);
    EXPECT_EQ(gap.lower, 400);
    EXPECT_EQ(gap.upper, 600);
}

TEST(GapBefore, NoneWhereThePartitionsMeetBackToTheOldest) {
    const IdRange all[] = {{100, 200}, {200, 300}, {300, 400}, {400, 500}};
    EXPECT_FALSE(gap_before(all, 4, 400).found);
    EXPECT_FALSE(gap_before(all, 4, 100).found);
    EXPECT_FALSE(gap_before(all, 0, 400).found);
    EXPECT_FALSE(lies_before(all[0], gap_before(all, 4, 400)));
    // A hole ahead of the current period is no gap before it: a clock set back.
    EXPECT_FALSE(gap_before(kStepped, kSteppedCount, 300).found);
    // The current period's partition itself missing: the gap ends where that period starts.
    const SeriesGap gap = gap_before(all, 4, 600);
    EXPECT_TRUE(gap.found);
    EXPECT_EQ(gap.lower, 500);
    EXPECT_EQ(gap.upper, 600);
    EXPECT_TRUE(lies_before(all[3], gap));
}

TEST(GapBefore, TheNearestOfMany) {
    // Holes from 200 to 300 and from 400 to 600: the nearer one is the gap, and everything
    // older than it lies before it, the older hole's partitions too.
    const IdRange series[] = {{100, 200}, {300, 400}, {600, 700}};
    const SeriesGap gap = gap_before(series, 3, 600);
    EXPECT_TRUE(gap.found);
    EXPECT_EQ(gap.lower, 400);
    EXPECT_EQ(gap.upper, 600);
    EXPECT_TRUE(lies_before(series[0], gap));
    EXPECT_TRUE(lies_before(series[1], gap));
    EXPECT_FALSE(lies_before(series[2], gap));
}

TEST(PartitionNameTag, SameForTheSameNameOnly) {
    char first[kPartitionNameTagSize];
    char again[kPartitionNameTagSize];
    char other[kPartitionNameTagSize];
    partition_name_tag("events", 6, first, sizeof(first));
    partition_name_tag("events", 6, again, sizeof(again));
    partition_name_tag("eventz", 6, other, sizeof(other));
    EXPECT_STREQ(first, again);
    EXPECT_STRNE(first, other);
    EXPECT_EQ(std::strlen(first), kPartitionNameTagSize - 1);
    EXPECT_EQ(first[0], '_');
    // FNV-1a's published value for the empty input.
    partition_name_tag("", 0, first, sizeof(first));
    EXPECT_STREQ(first, "_811c9dc5");
}

TEST(PartitionSpan, WholeMillisecondsOnly) {
    constexpr int64_t kMs = int64_t{1} << kTimestampShift;
    EXPECT_EQ(first_whole_ms(0), kEpochUnixMs);
    EXPECT_EQ(first_whole_ms(-5), kEpochUnixMs);
    EXPECT_EQ(first_whole_ms(7 * kMs), kEpochUnixMs + 7);
    EXPECT_EQ(first_whole_ms(7 * kMs + 1), kEpochUnixMs + 8);
    EXPECT_EQ(first_whole_ms(kMaxId), kEpochUnixMs + kMaxTimestampOffset + 1);
    EXPECT_EQ(end_ms(0), kEpochUnixMs);
    EXPECT_EQ(end_ms(-5), kEpochUnixMs);
    EXPECT_EQ(end_ms(7 * kMs), kEpochUnixMs + 7);
    EXPECT_EQ(end_ms(7 * kMs + 1), kEpochUnixMs + 7);
    EXPECT_EQ(end_ms(kMaxId), kEpochUnixMs + kMaxTimestampOffset);
}

TEST(HashBoundsCover, EveryRemainderOfTheLargestModulus) {
    const HashBound whole[] = {{2, 0}, {4, 1}, {4, 3}};
    EXPECT_TRUE(hash_bounds_cover(whole, 3, 1024));
    const HashBound missing[] = {{2, 0}, {4, 1}};
    EXPECT_FALSE(hash_bounds_cover(missing, 2, 1024));
    const HashBound one[] = {{1, 0}};
    EXPECT_TRUE(hash_bounds_cover(one, 1, 1024));
    EXPECT_FALSE(hash_bounds_cover(nullptr, 0, 1024));
    const HashBound large[] = {{2048, 0}};
    EXPECT_FALSE(hash_bounds_cover(large, 1, 1024));
}

TEST(NamesNoTable, ABareNumberOrADashOnly) {
    EXPECT_TRUE(names_no_table("16384"));
    EXPECT_TRUE(names_no_table(" 16384 "));
    EXPECT_TRUE(names_no_table("0"));
    EXPECT_TRUE(names_no_table("-"));
    EXPECT_FALSE(names_no_table(""));
    EXPECT_FALSE(names_no_table(" "));
    EXPECT_FALSE(names_no_table("events"));
    EXPECT_FALSE(names_no_table("\"16384\""));
    EXPECT_FALSE(names_no_table("public.16384"));
    EXPECT_FALSE(names_no_table("16384x"));
    EXPECT_FALSE(names_no_table("-1"));
}

}  // namespace
}  // namespace snowflake
