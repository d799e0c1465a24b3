// The Twitter (2010) Snowflake bit layout: widths, shifts, limits and the epoch, all constexpr.
// Pure C++17: no PostgreSQL header may be included anywhere under src/core.
#pragma once

#include <cstdint>

namespace snowflake {

inline constexpr int kSequenceBits = 12;
inline constexpr int kMachineBits = 5;
inline constexpr int kDatacenterBits = 5;
inline constexpr int kTimestampBits = 41;

inline constexpr int kMachineShift = kSequenceBits;
inline constexpr int kDatacenterShift = kMachineShift + kMachineBits;
inline constexpr int kTimestampShift = kDatacenterShift + kDatacenterBits;

inline constexpr int32_t kMaxSequence = (1 << kSequenceBits) - 1;
inline constexpr int32_t kMaxMachineId = (1 << kMachineBits) - 1;
inline constexpr int32_t kMaxDatacenterId = (1 << kDatacenterBits) - 1;
inline constexpr int64_t kMaxTimestampOffset = (int64_t{1} << kTimestampBits) - 1;

// Unix milliseconds of 2010-11-04T01:42:54.657Z, Twitter's epoch.
inline constexpr int64_t kEpochUnixMs = 1288834974657;
inline constexpr int64_t kMaxUnixMs = kEpochUnixMs + kMaxTimestampOffset;

// The largest id: every field at its maximum, the sign bit clear.
inline constexpr int64_t kMaxId = INT64_MAX;

// Bits 21..0 of an id: everything below the timestamp field.
inline constexpr int64_t kBelowTimestampMask = (int64_t{1} << kTimestampShift) - 1;

static_assert(kTimestampBits + kDatacenterBits + kMachineBits + kSequenceBits == 63,
              "the layout fills the 63 bits below the sign bit");
static_assert(kTimestampShift == 22 && kDatacenterShift == 17 && kMachineShift == 12);
static_assert(kMaxUnixMs == 3487858230208, "the 41-bit field runs out in July 2080");
static_assert((kMaxTimestampOffset << kTimestampShift | kBelowTimestampMask) == kMaxId);

}  // namespace snowflake
