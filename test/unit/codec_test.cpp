// Unit tests of the Snowflake codec: encode/decode, field ranges, time-range id bounds and the
// microsecond/millisecond bridges to PostgreSQL timestamps.
#include "core/codec.hpp"
#include "core/layout.hpp"

#include <cstdint>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

namespace snowflake {
namespace {

constexpr int64_t kI64Min = std::numeric_limits<int64_t>::min();
constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();
constexpr int32_t kI32Min = std::numeric_limits<int32_t>::min();
constexpr int32_t kI32Max = std::numeric_limits<int32_t>::max();

// The worked example of doc/reference.md "Encoding", used as the "everything else valid"
// baseline.
constexpr int64_t kExampleUnixMs = 1700000000000;
constexpr int64_t kExampleId = 1724551110457221119;

// Hides a value from the optimizer so the sanitizers see the arithmetic happen at run time.
int64_t opaque(int64_t value) {
    volatile int64_t v = value;
    return v;
}

// Rebuilds an id from its fields with the layout's formula (README "What it is"),
// independently of encode().
int64_t spec_id(int64_t unix_ms, int64_t dc, int64_t machine, int64_t sequence) {
    return ((unix_ms - 1288834974657) << 22) | (dc << 17) | (machine << 12) | sequence;
}

void expect_parts_eq(const Parts &actual, const Parts &expected) {
    EXPECT_EQ(actual.unix_ms, expected.unix_ms);
    EXPECT_EQ(actual.datacenter_id, expected.datacenter_id);
    EXPECT_EQ(actual.machine_id, expected.machine_id);
    EXPECT_EQ(actual.sequence, expected.sequence);
}

// The layout constants are the contract with stored data: a drift here corrupts every id.
TEST(LayoutTest, ConstantsMatchTheSpec) {
    EXPECT_EQ(kEpochUnixMs, 1288834974657);
    EXPECT_EQ(kMaxTimestampOffset, 2199023255551);
    EXPECT_EQ(kMaxUnixMs, 3487858230208);
    EXPECT_EQ(kMaxId, kI64Max);
    EXPECT_EQ(kMaxSequence, 4095);
    EXPECT_EQ(kMaxMachineId, 31);
    EXPECT_EQ(kMaxDatacenterId, 31);
    EXPECT_EQ(kBelowTimestampMask, (int64_t{1} << 22) - 1);
}

// A timestamp 1 ms outside the 41-bit window must be refused, not wrapped into a valid id.
TEST(EncodeTest, TimestampBoundaries) {
    const EncodeResult before = encode({kEpochUnixMs - 1, 0, 0, 0});
    EXPECT_EQ(before.status, CodecStatus::kTimestampOutOfRange);
    EXPECT_EQ(before.id, 0);

    const EncodeResult at_epoch = encode({kEpochUnixMs, 0, 0, 0});
    EXPECT_EQ(at_epoch.status, CodecStatus::kOk);
    EXPECT_EQ(at_epoch.id, 0);

    const EncodeResult at_epoch_plus_one = encode({kEpochUnixMs + 1, 0, 0, 0});
    EXPECT_EQ(at_epoch_plus_one.status, CodecStatus::kOk);
    EXPECT_EQ(at_epoch_plus_one.id, int64_t{1} << 22);

    const EncodeResult at_max = encode({kMaxUnixMs, 0, 0, 0});
    EXPECT_EQ(at_max.status, CodecStatus::kOk);
    EXPECT_EQ(at_max.id, kMaxTimestampOffset << 22);
    EXPECT_GT(at_max.id, 0);

    const EncodeResult after = encode({kMaxUnixMs + 1, 0, 0, 0});
    EXPECT_EQ(after.status, CodecStatus::kTimestampOutOfRange);
    EXPECT_EQ(after.id, 0);

    for (const int64_t bad : {kI64Min, kI64Max, int64_t{0}, int64_t{-1}}) {
        const EncodeResult r = encode({opaque(bad), 1, 2, 3});
        EXPECT_EQ(r.status, CodecStatus::kTimestampOutOfRange) << bad;
        EXPECT_EQ(r.id, 0) << bad;
    }
}

// Datacenter 32 would silently spill into the timestamp bit if masked or shifted unchecked.
TEST(EncodeTest, DatacenterBoundaries) {
    for (const int32_t bad : {-1, 32, kI32Min, kI32Max}) {
        const EncodeResult r = encode({kExampleUnixMs, bad, 0, 0});
        EXPECT_EQ(r.status, CodecStatus::kDatacenterIdOutOfRange) << bad;
        EXPECT_EQ(r.id, 0) << bad;
    }
    for (const int32_t good : {0, 1, 31}) {
        const EncodeResult r = encode({kExampleUnixMs, good, 0, 0});
        ASSERT_EQ(r.status, CodecStatus::kOk) << good;
        EXPECT_EQ(r.id, spec_id(kExampleUnixMs, good, 0, 0)) << good;
        EXPECT_EQ((r.id >> 17) & 0x1F, good);
    }
}

// Machine 32 would overwrite the datacenter field if the range check were missing.
TEST(EncodeTest, MachineBoundaries) {
    for (const int32_t bad : {-1, 32, kI32Min, kI32Max}) {
        const EncodeResult r = encode({kExampleUnixMs, 0, bad, 0});
        EXPECT_EQ(r.status, CodecStatus::kMachineIdOutOfRange) << bad;
        EXPECT_EQ(r.id, 0) << bad;
    }
    for (const int32_t good : {0, 1, 31}) {
        const EncodeResult r = encode({kExampleUnixMs, 0, good, 0});
        ASSERT_EQ(r.status, CodecStatus::kOk) << good;
        EXPECT_EQ(r.id, spec_id(kExampleUnixMs, 0, good, 0)) << good;
        EXPECT_EQ((r.id >> 12) & 0x1F, good);
    }
}

// Sequence 4096 would carry into the machine field and collide with another node's ids.
TEST(EncodeTest, SequenceBoundaries) {
    for (const int32_t bad : {-1, 4096, kI32Min, kI32Max}) {
        const EncodeResult r = encode({kExampleUnixMs, 0, 0, bad});
        EXPECT_EQ(r.status, CodecStatus::kSequenceOutOfRange) << bad;
        EXPECT_EQ(r.id, 0) << bad;
    }
    for (const int32_t good : {0, 1, 4095}) {
        const EncodeResult r = encode({kExampleUnixMs, 0, 0, good});
        ASSERT_EQ(r.status, CodecStatus::kOk) << good;
        EXPECT_EQ(r.id, spec_id(kExampleUnixMs, 0, 0, good)) << good;
        EXPECT_EQ(r.id & 0xFFF, good);
    }
}

// Error messages must be stable: with several bad fields the first in layout order is reported.
TEST(EncodeTest, ReportsFirstBadFieldInOrder) {
    EXPECT_EQ(encode({kEpochUnixMs - 1, -1, -1, -1}).status, CodecStatus::kTimestampOutOfRange);
    EXPECT_EQ(encode({kMaxUnixMs + 1, 32, 32, 4096}).status, CodecStatus::kTimestampOutOfRange);
    EXPECT_EQ(encode({kEpochUnixMs - 1, 0, 0, 4096}).status, CodecStatus::kTimestampOutOfRange);
    EXPECT_EQ(encode({kEpochUnixMs - 1, 0, 32, 0}).status, CodecStatus::kTimestampOutOfRange);
    EXPECT_EQ(encode({kExampleUnixMs, 32, 32, 4096}).status, CodecStatus::kDatacenterIdOutOfRange);
    EXPECT_EQ(encode({kExampleUnixMs, -1, 0, 4096}).status, CodecStatus::kDatacenterIdOutOfRange);
    EXPECT_EQ(encode({kExampleUnixMs, 31, 32, 4096}).status, CodecStatus::kMachineIdOutOfRange);
    EXPECT_EQ(encode({kExampleUnixMs, 0, -1, -1}).status, CodecStatus::kMachineIdOutOfRange);
    EXPECT_EQ(encode({kExampleUnixMs, 31, 31, 4096}).status, CodecStatus::kSequenceOutOfRange);
    EXPECT_EQ(encode({kExampleUnixMs, 31, 31, -1}).status, CodecStatus::kSequenceOutOfRange);
}

// Every field at its maximum must land exactly on INT64_MAX: no bit lost, sign bit untouched.
TEST(EncodeTest, AllFieldsAtMaximumGiveMaxId) {
    const EncodeResult r = encode({kMaxUnixMs, 31, 31, 4095});
    ASSERT_EQ(r.status, CodecStatus::kOk);
    EXPECT_EQ(r.id, kMaxId);
}

// The worked example (doc/reference.md "Encoding") is the one externally fixed data point; it
// must hold exactly.
TEST(CodecTest, WorkedExample) {
    EXPECT_EQ(kExampleUnixMs - kEpochUnixMs, 411165025343);
    EXPECT_EQ(int64_t{411165025343} << 22, 1724551110456246272);
    const EncodeResult r = encode({kExampleUnixMs, 7, 13, 4095});
    ASSERT_EQ(r.status, CodecStatus::kOk);
    EXPECT_EQ(r.id, kExampleId);

    const DecodeResult d = decode(kExampleId);
    ASSERT_EQ(d.status, CodecStatus::kOk);
    expect_parts_eq(d.parts, {kExampleUnixMs, 7, 13, 4095});
}

// Id 0 is a real id (the epoch, node 0/0, sequence 0), not a sentinel.
TEST(DecodeTest, Zero) {
    const DecodeResult d = decode(0);
    ASSERT_EQ(d.status, CodecStatus::kOk);
    expect_parts_eq(d.parts, {kEpochUnixMs, 0, 0, 0});
}

// The largest bigint must decode to the last millisecond of the window without overflow.
TEST(DecodeTest, MaxId) {
    const DecodeResult d = decode(opaque(kMaxId));
    ASSERT_EQ(d.status, CodecStatus::kOk);
    expect_parts_eq(d.parts, {kMaxUnixMs, 31, 31, 4095});
}

// A negative bigint is not an id; decoding it would shift the sign bit into the timestamp.
TEST(DecodeTest, NegativeIdsAreRejected) {
    for (const int64_t bad : {int64_t{-1}, kI64Min, kI64Min + 1, -kExampleId}) {
        const DecodeResult d = decode(opaque(bad));
        EXPECT_EQ(d.status, CodecStatus::kNegativeId) << bad;
        expect_parts_eq(d.parts, {0, 0, 0, 0});
    }
}

// Each field must come back unchanged: a wrong shift or mask shows up as a mismatch somewhere.
TEST(CodecTest, RoundTripGrid) {
    const int64_t times[] = {kEpochUnixMs,
                             kEpochUnixMs + 1,
                             kEpochUnixMs + 4095,
                             kExampleUnixMs,
                             kMaxUnixMs - 1,
                             kMaxUnixMs,
                             kEpochUnixMs + (int64_t{1} << 40)};
    const int32_t nodes[] = {0, 1, 2, 15, 16, 30, 31};
    const int32_t sequences[] = {0, 1, 2, 2047, 2048, 4094, 4095};
    for (const int64_t t : times) {
        for (const int32_t dc : nodes) {
            for (const int32_t m : nodes) {
                for (const int32_t s : sequences) {
                    const EncodeResult e = encode({t, dc, m, s});
                    ASSERT_EQ(e.status, CodecStatus::kOk);
                    ASSERT_GE(e.id, 0);
                    ASSERT_EQ(e.id, spec_id(t, dc, m, s));
                    const DecodeResult d = decode(e.id);
                    ASSERT_EQ(d.status, CodecStatus::kOk);
                    ASSERT_EQ(d.parts.unix_ms, t);
                    ASSERT_EQ(d.parts.datacenter_id, dc);
                    ASSERT_EQ(d.parts.machine_id, m);
                    ASSERT_EQ(d.parts.sequence, s);
                }
            }
        }
    }
}

// Every non-negative bigint is a valid id, so decode-then-encode must be the identity on it.
TEST(CodecTest, DecodeThenEncodeIsIdentity) {
    uint64_t x = 0x9E3779B97F4A7C15u;
    for (int i = 0; i < 100000; ++i) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        const auto id = static_cast<int64_t>(x >> 1);
        const DecodeResult d = decode(id);
        ASSERT_EQ(d.status, CodecStatus::kOk) << id;
        const EncodeResult e = encode(d.parts);
        ASSERT_EQ(e.status, CodecStatus::kOk) << id;
        ASSERT_EQ(e.id, id);
    }
}

// Error messages quote these: the right field name, the rejected value and the exact bounds.
TEST(FieldErrorTest, EachStatus) {
    struct Case {
        Parts parts;
        const char *name;
        int64_t value;
        int64_t min;
        int64_t max;
    };
    const Case cases[] = {
        {{kEpochUnixMs - 1, 0, 0, 0}, "unix_ms", kEpochUnixMs - 1, kEpochUnixMs, kMaxUnixMs},
        {{kI64Max, 0, 0, 0}, "unix_ms", kI64Max, kEpochUnixMs, kMaxUnixMs},
        {{kI64Min, -1, -1, -1}, "unix_ms", kI64Min, kEpochUnixMs, kMaxUnixMs},
        {{kExampleUnixMs, 32, 0, 0}, "datacenter_id", 32, 0, 31},
        {{kExampleUnixMs, kI32Min, -5, -5}, "datacenter_id", kI32Min, 0, 31},
        {{kExampleUnixMs, 0, -1, 0}, "machine_id", -1, 0, 31},
        {{kExampleUnixMs, 31, kI32Max, 4096}, "machine_id", kI32Max, 0, 31},
        {{kExampleUnixMs, 0, 0, 4096}, "sequence", 4096, 0, 4095},
        {{kExampleUnixMs, 0, 0, -1}, "sequence", -1, 0, 4095},
    };
    for (const Case &c : cases) {
        const CodecStatus status = encode(c.parts).status;
        ASSERT_NE(status, CodecStatus::kOk) << c.name;
        const FieldError e = field_error(status, c.parts);
        ASSERT_NE(e.name, nullptr);
        EXPECT_STREQ(e.name, c.name);
        EXPECT_EQ(e.value, c.value) << c.name;
        EXPECT_EQ(e.min, c.min) << c.name;
        EXPECT_EQ(e.max, c.max) << c.name;
    }
}

// Statuses that are not an encode field error must not produce a misleading field description.
TEST(FieldErrorTest, NonFieldStatusesGiveEmptyError) {
    for (const CodecStatus status : {CodecStatus::kOk, CodecStatus::kNegativeId}) {
        const FieldError e = field_error(status, {kI64Min, 99, 99, 99});
        ASSERT_NE(e.name, nullptr);
        EXPECT_STREQ(e.name, "");
        EXPECT_EQ(e.value, 0);
        EXPECT_EQ(e.min, 0);
        EXPECT_EQ(e.max, 0);
    }
}

// The range reported for a status must be exactly the range encode() accepts for that field.
TEST(FieldErrorTest, RangeMatchesWhatEncodeAccepts) {
    const Parts base{kExampleUnixMs, 0, 0, 0};
    const FieldError ts = field_error(CodecStatus::kTimestampOutOfRange, base);
    EXPECT_EQ(encode({ts.min, 0, 0, 0}).status, CodecStatus::kOk);
    EXPECT_EQ(encode({ts.max, 0, 0, 0}).status, CodecStatus::kOk);
    EXPECT_EQ(encode({ts.min - 1, 0, 0, 0}).status, CodecStatus::kTimestampOutOfRange);
    EXPECT_EQ(encode({ts.max + 1, 0, 0, 0}).status, CodecStatus::kTimestampOutOfRange);

    const FieldError dc = field_error(CodecStatus::kDatacenterIdOutOfRange, base);
    EXPECT_EQ(encode({kExampleUnixMs, static_cast<int32_t>(dc.min), 0, 0}).status,
              CodecStatus::kOk);
    EXPECT_EQ(encode({kExampleUnixMs, static_cast<int32_t>(dc.max), 0, 0}).status,
              CodecStatus::kOk);
    EXPECT_EQ(encode({kExampleUnixMs, static_cast<int32_t>(dc.min - 1), 0, 0}).status,
              CodecStatus::kDatacenterIdOutOfRange);
    EXPECT_EQ(encode({kExampleUnixMs, static_cast<int32_t>(dc.max + 1), 0, 0}).status,
              CodecStatus::kDatacenterIdOutOfRange);

    const FieldError m = field_error(CodecStatus::kMachineIdOutOfRange, base);
    EXPECT_EQ(encode({kExampleUnixMs, 0, static_cast<int32_t>(m.min), 0}).status, CodecStatus::kOk);
    EXPECT_EQ(encode({kExampleUnixMs, 0, static_cast<int32_t>(m.max), 0}).status, CodecStatus::kOk);
    EXPECT_EQ(encode({kExampleUnixMs, 0, static_cast<int32_t>(m.min - 1), 0}).status,
              CodecStatus::kMachineIdOutOfRange);
    EXPECT_EQ(encode({kExampleUnixMs, 0, static_cast<int32_t>(m.max + 1), 0}).status,
              CodecStatus::kMachineIdOutOfRange);

    const FieldError s = field_error(CodecStatus::kSequenceOutOfRange, base);
    EXPECT_EQ(encode({kExampleUnixMs, 0, 0, static_cast<int32_t>(s.min)}).status, CodecStatus::kOk);
    EXPECT_EQ(encode({kExampleUnixMs, 0, 0, static_cast<int32_t>(s.max)}).status, CodecStatus::kOk);
    EXPECT_EQ(encode({kExampleUnixMs, 0, 0, static_cast<int32_t>(s.min - 1)}).status,
              CodecStatus::kSequenceOutOfRange);
    EXPECT_EQ(encode({kExampleUnixMs, 0, 0, static_cast<int32_t>(s.max + 1)}).status,
              CodecStatus::kSequenceOutOfRange);
}

// Range scans at the start of the window must neither skip id 0 nor go negative.
TEST(IdBoundsTest, AroundTheEpoch) {
    EXPECT_EQ(min_id_at_or_after(kEpochUnixMs - 1), 0);
    EXPECT_EQ(min_id_at_or_after(kEpochUnixMs), 0);
    EXPECT_EQ(min_id_at_or_after(kEpochUnixMs + 1), int64_t{1} << 22);

    EXPECT_EQ(max_id_at_or_before(kEpochUnixMs - 1), -1);
    EXPECT_EQ(max_id_at_or_before(kEpochUnixMs), kBelowTimestampMask);
    EXPECT_EQ(max_id_at_or_before(kEpochUnixMs + 1), (int64_t{2} << 22) - 1);
}

// Range scans at the end of the window must reach kMaxId and never overflow past it.
TEST(IdBoundsTest, AroundMaxUnixMs) {
    const int64_t last_ms_first_id = kMaxTimestampOffset << 22;
    EXPECT_EQ(min_id_at_or_after(kMaxUnixMs - 1), last_ms_first_id - (int64_t{1} << 22));
    EXPECT_EQ(min_id_at_or_after(kMaxUnixMs), last_ms_first_id);
    EXPECT_EQ(min_id_at_or_after(kMaxUnixMs + 1), kMaxId);

    EXPECT_EQ(max_id_at_or_before(kMaxUnixMs - 1), last_ms_first_id - 1);
    EXPECT_EQ(max_id_at_or_before(kMaxUnixMs), kMaxId);
    EXPECT_EQ(max_id_at_or_before(kMaxUnixMs + 1), kMaxId);
}

// SQL can pass any timestamp, infinities included; the bounds must clamp without overflow.
TEST(IdBoundsTest, ExtremeInputsClamp) {
    EXPECT_EQ(min_id_at_or_after(opaque(kI64Min)), 0);
    EXPECT_EQ(min_id_at_or_after(opaque(kI64Max)), kMaxId);
    EXPECT_EQ(max_id_at_or_before(opaque(kI64Min)), -1);
    EXPECT_EQ(max_id_at_or_before(opaque(kI64Max)), kMaxId);
    EXPECT_EQ(min_id_at_or_after(0), 0);
    EXPECT_EQ(max_id_at_or_before(0), -1);
}

// Timestamp predicates become index ranges: each ms's ids must fit, ms must tile with no gap.
TEST(IdBoundsTest, BoundsEncloseEveryIdOfTheirMillisecond) {
    std::vector<int64_t> times = {kEpochUnixMs,   kEpochUnixMs + 1, kEpochUnixMs + 2,
                                  kExampleUnixMs, kMaxUnixMs - 2,   kMaxUnixMs - 1,
                                  kMaxUnixMs};
    uint64_t x = 12345;
    for (int i = 0; i < 1000; ++i) {
        x = x * 6364136223846793005u + 1442695040888963407u;
        times.push_back(kEpochUnixMs + static_cast<int64_t>((x >> 11) % (kMaxTimestampOffset + 1)));
    }
    const int32_t nodes[] = {0, 1, 30, 31};
    const int32_t sequences[] = {0, 1, 4094, 4095};
    for (const int64_t t : times) {
        const int64_t lo = min_id_at_or_after(t);
        const int64_t hi = max_id_at_or_before(t);
        // Tight: the bounds are themselves ids of millisecond t.
        ASSERT_EQ(decode(lo).parts.unix_ms, t);
        ASSERT_EQ(decode(hi).parts.unix_ms, t);
        ASSERT_EQ(lo, encode({t, 0, 0, 0}).id);
        ASSERT_EQ(hi, encode({t, 31, 31, 4095}).id);
        for (const int32_t dc : nodes) {
            for (const int32_t m : nodes) {
                for (const int32_t s : sequences) {
                    const int64_t id = encode({t, dc, m, s}).id;
                    ASSERT_LE(lo, id) << t;
                    ASSERT_LE(id, hi) << t;
                }
            }
        }
        ASSERT_LT(max_id_at_or_before(t - 1), lo) << t;
        ASSERT_EQ(max_id_at_or_before(t - 1) + 1, lo) << t;
    }
}

// Both bounds must be monotone in time, or a range query could come out inverted.
TEST(IdBoundsTest, Monotone) {
    const int64_t times[] = {kI64Min,
                             kI64Min + 1,
                             -1,
                             0,
                             kEpochUnixMs - 1,
                             kEpochUnixMs,
                             kEpochUnixMs + 1,
                             kExampleUnixMs,
                             kMaxUnixMs - 1,
                             kMaxUnixMs,
                             kMaxUnixMs + 1,
                             kI64Max - 1,
                             kI64Max};
    for (size_t i = 1; i < sizeof(times) / sizeof(times[0]); ++i) {
        EXPECT_LE(min_id_at_or_after(times[i - 1]), min_id_at_or_after(times[i])) << times[i];
        EXPECT_LE(max_id_at_or_before(times[i - 1]), max_id_at_or_before(times[i])) << times[i];
        EXPECT_GE(min_id_at_or_after(times[i]), 0);
        EXPECT_GE(max_id_at_or_before(times[i]), -1);
    }
}

// Truncating division rounds negative timestamps the wrong way; these must round to -inf / +inf.
TEST(DivisionTest, FloorAndCeilWithPositiveDivisor) {
    struct Case {
        int64_t value;
        int64_t floor;
        int64_t ceil;
    };
    const Case cases[] = {
        {0, 0, 0},       {1, 0, 1},       {999, 0, 1},     {1000, 1, 1},    {1001, 1, 2},
        {1999, 1, 2},    {2000, 2, 2},    {-1, -1, 0},     {-999, -1, 0},   {-1000, -1, -1},
        {-1001, -2, -1}, {-1999, -2, -1}, {-2000, -2, -2}, {-2001, -3, -2},
    };
    for (const Case &c : cases) {
        EXPECT_EQ(floor_div(opaque(c.value), 1000), c.floor) << c.value;
        EXPECT_EQ(ceil_div(opaque(c.value), 1000), c.ceil) << c.value;
    }
    EXPECT_EQ(floor_div(7, 2), 3);
    EXPECT_EQ(ceil_div(7, 2), 4);
    EXPECT_EQ(floor_div(-7, 2), -4);
    EXPECT_EQ(ceil_div(-7, 2), -3);
    EXPECT_EQ(floor_div(opaque(kI64Min), 1000), -9223372036854776);
    EXPECT_EQ(ceil_div(opaque(kI64Min), 1000), -9223372036854775);
    EXPECT_EQ(floor_div(opaque(kI64Max), 1000), 9223372036854775);
    EXPECT_EQ(ceil_div(opaque(kI64Max), 1000), 9223372036854776);
    EXPECT_EQ(floor_div(opaque(kI64Max), 1), kI64Max);
    EXPECT_EQ(ceil_div(opaque(kI64Min), 1), kI64Min);
}

// Named floor and ceil, they must round the right way whatever the divisor's sign.
TEST(DivisionTest, FloorAndCeilWithNegativeDivisor) {
    EXPECT_EQ(floor_div(7, -2), -4);  // -3.5 -> -4
    EXPECT_EQ(ceil_div(7, -2), -3);   // -3.5 -> -3
    EXPECT_EQ(floor_div(-7, -2), 3);  // 3.5 -> 3
    EXPECT_EQ(ceil_div(-7, -2), 4);   // 3.5 -> 4
    EXPECT_EQ(floor_div(-6, -2), 3);
    EXPECT_EQ(ceil_div(6, -2), -3);
}

// Constant evaluation rejects UB, so these prove no overflow at PostgreSQL's +/-infinity.
static_assert(unix_ms_floor_from_pg_us(std::numeric_limits<int64_t>::min()) == -9222425352054776);
static_assert(unix_ms_ceil_from_pg_us(std::numeric_limits<int64_t>::min()) == -9222425352054775);
static_assert(unix_ms_floor_from_pg_us(std::numeric_limits<int64_t>::max()) == 9224318721654775);
static_assert(unix_ms_ceil_from_pg_us(std::numeric_limits<int64_t>::max()) == 9224318721654776);

// -infinity / +infinity timestamps must map far outside the id window, so the bounds clamp.
TEST(PgTimeTest, ExtremesDoNotOverflow) {
    const int64_t floor_min = unix_ms_floor_from_pg_us(opaque(kI64Min));
    const int64_t ceil_min = unix_ms_ceil_from_pg_us(opaque(kI64Min));
    const int64_t floor_max = unix_ms_floor_from_pg_us(opaque(kI64Max));
    const int64_t ceil_max = unix_ms_ceil_from_pg_us(opaque(kI64Max));
    EXPECT_EQ(floor_min, -9222425352054776);
    EXPECT_EQ(ceil_min, -9222425352054775);
    EXPECT_EQ(floor_max, 9224318721654775);
    EXPECT_EQ(ceil_max, 9224318721654776);
    for (const int64_t before : {floor_min, ceil_min}) {
        EXPECT_LT(before, kEpochUnixMs - 1000000000000);
        EXPECT_EQ(min_id_at_or_after(before), 0);
        EXPECT_EQ(max_id_at_or_before(before), -1);
    }
    for (const int64_t after : {floor_max, ceil_max}) {
        EXPECT_GT(after, kMaxUnixMs + 1000000000000);
        EXPECT_EQ(min_id_at_or_after(after), kMaxId);
        EXPECT_EQ(max_id_at_or_before(after), kMaxId);
    }
}

// Truncating -1 us to ms 0 (not -1) would make range queries lose or gain a millisecond.
TEST(PgTimeTest, SubMillisecondRounding) {
    struct Case {
        int64_t pg_us;
        int64_t floor_ms;  // relative to kPgEpochUnixMs
        int64_t ceil_ms;
    };
    const Case cases[] = {
        {0, 0, 0},     {1, 0, 1},       {999, 0, 1},     {1000, 1, 1},    {1001, 1, 2}, {-1, -1, 0},
        {-999, -1, 0}, {-1000, -1, -1}, {-1001, -2, -1}, {-1500, -2, -1}, {1500, 1, 2},
    };
    for (const Case &c : cases) {
        EXPECT_EQ(unix_ms_floor_from_pg_us(opaque(c.pg_us)), kPgEpochUnixMs + c.floor_ms)
            << c.pg_us;
        EXPECT_EQ(unix_ms_ceil_from_pg_us(opaque(c.pg_us)), kPgEpochUnixMs + c.ceil_ms) << c.pg_us;
    }
    // Around the Snowflake epoch, which lies after the PostgreSQL epoch.
    const int64_t epoch_us = pg_us_from_unix_ms(kEpochUnixMs);
    EXPECT_EQ(unix_ms_floor_from_pg_us(epoch_us - 1), kEpochUnixMs - 1);
    EXPECT_EQ(unix_ms_ceil_from_pg_us(epoch_us - 1), kEpochUnixMs);
    EXPECT_EQ(unix_ms_floor_from_pg_us(epoch_us + 1), kEpochUnixMs);
    EXPECT_EQ(unix_ms_ceil_from_pg_us(epoch_us + 1), kEpochUnixMs + 1);
    // Before 1970 (negative Unix ms) rounding must still go the right way.
    const int64_t pre_1970_us = pg_us_from_unix_ms(-5) - 1;
    EXPECT_EQ(unix_ms_floor_from_pg_us(pre_1970_us), -6);
    EXPECT_EQ(unix_ms_ceil_from_pg_us(pre_1970_us), -5);
}

// Timestamps shown to users come from pg_us_from_unix_ms; converting back must be lossless.
TEST(PgTimeTest, RoundTripFromUnixMs) {
    EXPECT_EQ(pg_us_from_unix_ms(kPgEpochUnixMs), 0);
    EXPECT_EQ(pg_us_from_unix_ms(kEpochUnixMs), 342150174657000);
    EXPECT_EQ(pg_us_from_unix_ms(kExampleUnixMs), (kExampleUnixMs - 946684800000) * 1000);
    for (const int64_t ms :
         {kEpochUnixMs, kEpochUnixMs + 1, kExampleUnixMs, kMaxUnixMs - 1, kMaxUnixMs,
          kPgEpochUnixMs, kPgEpochUnixMs - 1, int64_t{0}, int64_t{-1}}) {
        const int64_t us = pg_us_from_unix_ms(opaque(ms));
        EXPECT_EQ(us % 1000, 0) << ms;
        EXPECT_EQ(unix_ms_floor_from_pg_us(us), ms) << ms;
        EXPECT_EQ(unix_ms_ceil_from_pg_us(us), ms) << ms;
        // Any microsecond inside the millisecond floors back to it, and ceils to the next.
        EXPECT_EQ(unix_ms_floor_from_pg_us(us + 999), ms) << ms;
        EXPECT_EQ(unix_ms_ceil_from_pg_us(us + 1), ms + 1) << ms;
    }
}

TEST(IdTextTest, ReadsWhatBigintReadsForAnId) {
    EXPECT_EQ(parse_id_text("0").id, 0);
    EXPECT_EQ(parse_id_text("  +42\n").id, 42);
    EXPECT_EQ(parse_id_text("-0").status, IdTextStatus::kOk);
    EXPECT_EQ(parse_id_text("9223372036854775807").id, kMaxId);
    EXPECT_EQ(parse_id_text("0009223372036854775807").id, kMaxId);
    EXPECT_EQ(parse_id_text("1541815603606036480").id, 1541815603606036480);
}

TEST(IdTextTest, RefusesNegativeAndTooLargeValues) {
    EXPECT_EQ(parse_id_text("-1").status, IdTextStatus::kNegative);
    EXPECT_EQ(parse_id_text(" -9223372036854775808").status, IdTextStatus::kNegative);
    EXPECT_EQ(parse_id_text("-99999999999999999999").status, IdTextStatus::kNegative);
    EXPECT_EQ(parse_id_text("9223372036854775808").status, IdTextStatus::kTooLarge);
    EXPECT_EQ(parse_id_text("18446744073709551626").status, IdTextStatus::kTooLarge);
}

TEST(IdTextTest, RefusesWhatIsNotDecimalDigits) {
    for (const char *text : {"", " ", "+", "-", "1 2", "12a", "0x10", "1_000", "1.0", "1e3", "--1",
                             "+-1", "\xd9\xa1"}) {
        EXPECT_EQ(parse_id_text(text).status, IdTextStatus::kMalformed) << text;
    }
}

}  // namespace
}  // namespace snowflake
