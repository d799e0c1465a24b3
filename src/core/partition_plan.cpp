// Pure rules of time partitions (partition_plan.hpp).

#include "core/partition_plan.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>

#include "core/codec.hpp"
#include "core/layout.hpp"

namespace snowflake {

namespace {

// The index of the boundary equal to id, or boundary_count if none is.
size_t boundary_index(const int64_t *boundaries, size_t boundary_count, int64_t id) {
    size_t low = 0;
    size_t high = boundary_count;
    while (low < high) {
        const size_t middle = low + (high - low) / 2;
        if (boundaries[middle] < id) {
            low = middle + 1;
        } else {
            high = middle;
        }
    }
    return low < boundary_count && boundaries[low] == id ? low : boundary_count;
}

}  // namespace

bool partition_unit_of(int32_t months, int32_t days, int64_t microseconds, PartitionUnit *unit) {
    for (const PartitionInterval &interval : kPartitionIntervals) {
        if (interval.months == months && interval.days == days &&
            interval.microseconds == microseconds) {
            *unit = interval.unit;
            return true;
        }
    }
    return false;
}

// Every unit has its row: the table is indexed by the enumeration's order.
const PartitionInterval &partition_interval(PartitionUnit unit) {
    return kPartitionIntervals[static_cast<size_t>(unit)];
}

const char *partition_unit_name(PartitionUnit unit) {
    return partition_interval(unit).trunc_field;
}

// snprintf cuts what does not fit and keeps the text terminated.
size_t partition_interval_list(const char *quote, char *out, size_t size) {
    if (size == 0) {
        return 0;
    }
    size_t length = 0;
    for (size_t i = 0; i < kPartitionIntervalCount && length < size; i++) {
        const char *separator = i == 0 ? "" : (i + 1 == kPartitionIntervalCount ? " or " : ", ");
        const int written = std::snprintf(out + length, size - length, "%s%s%s%s", separator, quote,
                                          kPartitionIntervals[i].text, quote);
        length += written < 0 ? 0 : static_cast<size_t>(written);
    }
    return length < size ? length : size - 1;
}

size_t partition_suffix(PartitionUnit unit, const PeriodStart &start, char *out, size_t size) {
    int written = 0;
    switch (unit) {
        case PartitionUnit::kMonth:
            written = std::snprintf(out, size, "_p%04d_%02d", start.year, start.month);
            break;
        case PartitionUnit::kWeek:
            written = std::snprintf(out, size, "_p%04dw%02d", start.iso_year, start.iso_week);
            break;
        case PartitionUnit::kDay:
            written =
                std::snprintf(out, size, "_p%04d_%02d_%02d", start.year, start.month, start.day);
            break;
        case PartitionUnit::kHour:
            written = std::snprintf(out, size, "_p%04d_%02d_%02d_%02d", start.year, start.month,
                                    start.day, start.hour);
            break;
        case PartitionUnit::kQuarter:
            written = std::snprintf(out, size, "_p%04dq%d", start.year, (start.month - 1) / 3 + 1);
            break;
        case PartitionUnit::kYear:
            written = std::snprintf(out, size, "_p%04d", start.year);
            break;
    }
    return written < 0 ? 0 : static_cast<size_t>(written);
}

RangeCheck check_ranges(const IdRange *existing, size_t existing_count, const int64_t *boundaries,
                        size_t boundary_count) {
    for (size_t i = 0; i < existing_count; i++) {
        const size_t index = boundary_index(boundaries, boundary_count, existing[i].lower);
        if (index + 1 >= boundary_count || boundaries[index + 1] != existing[i].upper) {
            return {RangeFit::kMisaligned, i};
        }
        for (size_t j = 0; j < i; j++) {
            if (existing[j].lower == existing[i].lower) {
                return {RangeFit::kOverlapping, i};
            }
        }
    }
    return {RangeFit::kAligned, 0};
}

size_t missing_periods(const IdRange *existing, size_t existing_count, const int64_t *boundaries,
                       size_t boundary_count, size_t first, size_t last, bool *missing) {
    size_t count = 0;
    for (size_t period = 0; period + 1 < boundary_count; period++) {
        missing[period] = false;
        if (period < first || period >= last) {
            continue;
        }
        bool found = false;
        for (size_t i = 0; i < existing_count && !found; i++) {
            found = existing[i].lower == boundaries[period];
        }
        missing[period] = !found;
        count += found ? 0 : 1;
    }
    return count;
}

size_t period_of(const int64_t *boundaries, size_t boundary_count, int64_t id) {
    size_t period = 0;
    while (period + 2 < boundary_count && boundaries[period + 1] <= id) {
        period++;
    }
    return period;
}

bool is_expired(const IdRange &range, int64_t retention_start_id) {
    return range.upper <= retention_start_id;
}

// A key's millisecond is the one end_ms() finds for a bound equal to it.
RetentionBasis retention_basis(int64_t now_pg_us, bool has_key, int64_t newest_key) {
    if (!has_key) {
        return {now_pg_us, false};
    }
    const int64_t key_pg_us = pg_us_from_unix_ms(end_ms(newest_key));
    if (key_pg_us < now_pg_us) {
        return {key_pg_us, true};
    }
    return {now_pg_us, false};
}

// Ordered by lower bound alone: partitions that line up never share one.
void sort_ranges(IdRange *ranges, size_t count) {
    std::sort(ranges, ranges + count,
              [](const IdRange &a, const IdRange &b) { return a.lower < b.lower; });
}

// A partition that reaches past where the walk has got to meets it too, so that only a real
// hole ends the run.
SeriesGap gap_before(const IdRange *series, size_t count, int64_t current_lower) {
    size_t older = 0;
    while (older < count && series[older].lower < current_lower) {
        older++;
    }
    int64_t reach = current_lower;
    while (older > 0 && series[older - 1].upper >= reach) {
        reach = std::min(reach, series[older - 1].lower);
        older--;
    }
    if (older == 0) {
        return {false, 0, 0};
    }
    return {true, series[older - 1].upper, reach};
}

// A partition before the gap ends at or before its start.
bool lies_before(const IdRange &range, const SeriesGap &gap) {
    return gap.found && range.upper <= gap.lower;
}

// Only a partition the clock would expire can be held back, and only one the retention would
// expire is kept for a gap: the newest key is the first reason given.
Expiry expiry_of(const IdRange &range, int64_t clock_start_id, int64_t retention_start_id,
                 const SeriesGap &gap) {
    if (is_expired(range, retention_start_id)) {
        return lies_before(range, gap) ? Expiry::kBeforeGap : Expiry::kExpired;
    }
    return is_expired(range, clock_start_id) ? Expiry::kHeldBack : Expiry::kKept;
}

// FNV-1a over the name's bytes: no table, seed or platform dependence.
void partition_name_tag(const char *parent_name, size_t length, char *out, size_t size) {
    uint32_t hash = 2166136261u;
    for (size_t i = 0; i < length; i++) {
        hash = (hash ^ static_cast<unsigned char>(parent_name[i])) * 16777619u;
    }
    std::snprintf(out, size, "_%08x", static_cast<unsigned>(hash));
}

// Ids below 0 are not Snowflake ids: the range's time begins at the epoch.
int64_t first_whole_ms(int64_t lower_id) {
    if (lower_id <= 0) {
        return kEpochUnixMs;
    }
    const int64_t offset = lower_id >> kTimestampShift;
    const bool whole = (lower_id & kBelowTimestampMask) == 0;
    return kEpochUnixMs + offset + (whole ? 0 : 1);
}

// The ids of the upper bound's millisecond below it are held, but not that millisecond whole.
int64_t end_ms(int64_t upper_id) {
    if (upper_id <= 0) {
        return kEpochUnixMs;
    }
    return kEpochUnixMs + (upper_id >> kTimestampShift);
}

// Each remainder of the largest modulus is tried against every bound: count times the modulus.
bool hash_bounds_cover(const HashBound *bounds, size_t count, int32_t limit) {
    int32_t largest = 0;
    for (size_t i = 0; i < count; i++) {
        if (bounds[i].modulus <= 0) {
            return false;
        }
        largest = std::max(largest, bounds[i].modulus);
    }
    if (largest == 0 || largest > limit) {
        return false;
    }
    for (int32_t remainder = 0; remainder < largest; remainder++) {
        bool taken = false;
        for (size_t i = 0; i < count && !taken; i++) {
            taken = remainder % bounds[i].modulus == bounds[i].remainder;
        }
        if (!taken) {
            return false;
        }
    }
    return true;
}

// A name is never all digits unquoted: regclass's output quotes a name that begins with a digit.
bool names_no_table(const char *text) {
    if (std::strcmp(text, "-") == 0) {
        return true;
    }
    while (std::isspace(static_cast<unsigned char>(*text))) {
        text++;
    }
    const char *digits = text;
    while (std::isdigit(static_cast<unsigned char>(*text))) {
        text++;
    }
    const bool has_digits = text > digits;
    while (std::isspace(static_cast<unsigned char>(*text))) {
        text++;
    }
    return has_digits && *text == '\0';
}

}  // namespace snowflake
