// Unit tests of the id generator state machine, driven by a hand-moved clock, plus a
// multi-threaded uniqueness test on one shared state word.
#include "core/generator.hpp"
#include "core/codec.hpp"
#include "core/layout.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>
#include <set>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace snowflake {
namespace {

constexpr int64_t kI64Min = std::numeric_limits<int64_t>::min();
constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kT = 1700000000000;  // an arbitrary "now" well inside the window
constexpr int kIdsPerMs = 4096;
// An issue limit that never binds, for the tests that are not about the durable mark.
constexpr int64_t kNoLimit = kMaxUnixMs;

Node node_of(int32_t dc, int32_t m) {
    const NodeResult r = make_node(dc, m);
    EXPECT_EQ(r.status, CodecStatus::kOk);
    return r.node;
}

uint64_t word(const GeneratorState &state) {
    return state.after_last_id.load();
}

// A clock moved by hand that counts how often the generator reads it.
struct FakeClock {
    int64_t now;
    int reads = 0;
    int64_t operator()() noexcept {
        ++reads;
        return now;
    }
};

// One call of next_id at a fixed clock reading, by a caller that has not seen the state word yet
// (its guess fails unless the state is new).
NextResult next_at(GeneratorState &state, int64_t now, Node node) {
    FakeClock clock{now};
    SeenWord seen;
    const NextResult r = next_id(state, node, kNoLimit, seen, clock);
    EXPECT_EQ(r.now_unix_ms, now);
    EXPECT_GE(clock.reads, 1);
    return r;
}

// Issues one id and checks it was issued, returning it decoded.
Parts issue(GeneratorState &state, int64_t now, Node node, int64_t *id_out = nullptr) {
    const NextResult r = next_at(state, now, node);
    EXPECT_EQ(r.status, NextStatus::kIssued) << "now=" << now;
    const DecodeResult d = decode(r.id);
    EXPECT_EQ(d.status, CodecStatus::kOk) << r.id;
    if (id_out != nullptr) {
        *id_out = r.id;
    }
    return d.parts;
}

// Issues all 4,096 ids of one millisecond and checks each: that millisecond, the node's fields,
// the next sequence number, above the id before. The last id goes to *last_id.
void issue_whole_millisecond(GeneratorState &state, int64_t unix_ms, int32_t dc, int32_t m,
                             int64_t *last_id) {
    const Node node = node_of(dc, m);
    int64_t previous = -1;
    for (int i = 0; i < kIdsPerMs; ++i) {
        int64_t id = 0;
        const Parts p = issue(state, unix_ms, node, &id);
        ASSERT_GT(id, previous);
        ASSERT_EQ(id & (int64_t{0x3FF} << 12), node.bits) << dc << "/" << m;
        ASSERT_EQ(p.unix_ms, unix_ms);
        ASSERT_EQ(p.sequence, i);
        ASSERT_EQ(p.datacenter_id, dc);
        ASSERT_EQ(p.machine_id, m);
        previous = id;
    }
    *last_id = previous;
}

// A node with an out-of-range id would OR garbage into other fields of every id it issues.
TEST(MakeNodeTest, RejectsBadIds) {
    EXPECT_EQ(make_node(-1, 0).status, CodecStatus::kDatacenterIdOutOfRange);
    EXPECT_EQ(make_node(32, 0).status, CodecStatus::kDatacenterIdOutOfRange);
    EXPECT_EQ(make_node(std::numeric_limits<int32_t>::min(), 0).status,
              CodecStatus::kDatacenterIdOutOfRange);
    EXPECT_EQ(make_node(0, -1).status, CodecStatus::kMachineIdOutOfRange);
    EXPECT_EQ(make_node(0, 32).status, CodecStatus::kMachineIdOutOfRange);
    EXPECT_EQ(make_node(31, std::numeric_limits<int32_t>::max()).status,
              CodecStatus::kMachineIdOutOfRange);
    // Both bad: the datacenter is reported first, like encode().
    EXPECT_EQ(make_node(-1, 32).status, CodecStatus::kDatacenterIdOutOfRange);
}

// The node bits are ORed into every id unchanged, so they must sit exactly in bits 21..12.
TEST(MakeNodeTest, GoodIdsGiveShiftedBits) {
    std::set<int64_t> seen;
    for (int32_t dc = 0; dc <= 31; ++dc) {
        for (int32_t m = 0; m <= 31; ++m) {
            const NodeResult r = make_node(dc, m);
            ASSERT_EQ(r.status, CodecStatus::kOk) << dc << "/" << m;
            ASSERT_EQ(r.node.bits, (int64_t{dc} << 17) | (int64_t{m} << 12)) << dc << "/" << m;
            seen.insert(r.node.bits);
        }
    }
    EXPECT_EQ(seen.size(), 1024u);
}

// A fresh state must mean "nothing issued", or the first id could be refused or skipped.
TEST(GeneratorTest, FreshStateIsEmpty) {
    GeneratorState state;
    EXPECT_EQ(word(state), 0u);
    const LastIssued last = last_issued(state);
    EXPECT_FALSE(last.any);
    EXPECT_EQ(last.unix_ms, 0);
}

// The per-millisecond ceiling is the uniqueness guarantee: a 4097th id in one ms would collide.
TEST(GeneratorTest, StandingClockCountsThenExhausts) {
    GeneratorState state;
    const Node node = node_of(7, 13);
    int64_t previous = -1;
    ASSERT_NO_FATAL_FAILURE(issue_whole_millisecond(state, kT, 7, 13, &previous));
    EXPECT_EQ(previous, encode({kT, 7, 13, 4095}).id);

    const uint64_t before = word(state);
    const NextResult exhausted = next_at(state, kT, node);
    EXPECT_EQ(exhausted.status, NextStatus::kSequenceExhausted);
    EXPECT_EQ(exhausted.id, 0);
    EXPECT_EQ(word(state), before);

    // The refusal did not move the state: asking again at the same ms is refused again.
    for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(next_at(state, kT, node).status, NextStatus::kSequenceExhausted);
        EXPECT_EQ(word(state), before);
    }
    EXPECT_EQ(last_issued(state).unix_ms, kT);

    // The next millisecond starts over at sequence 0.
    int64_t id = 0;
    const Parts p = issue(state, kT + 1, node, &id);
    EXPECT_EQ(p.unix_ms, kT + 1);
    EXPECT_EQ(p.sequence, 0);
    EXPECT_GT(id, previous);
    EXPECT_EQ(issue(state, kT + 1, node).sequence, 1);
}

// Ids from one node must be strictly increasing and carry the clock reading as timestamp.
TEST(GeneratorTest, AdvancingClock) {
    GeneratorState state;
    const Node node = node_of(3, 4);
    int64_t previous = -1;
    for (int64_t ms = 0; ms < 2000; ++ms) {
        const int64_t now = kT + ms;
        const int per_ms = static_cast<int>(ms % 5);  // 0..4 ids in this millisecond
        for (int i = 0; i < per_ms; ++i) {
            int64_t id = 0;
            const Parts p = issue(state, now, node, &id);
            ASSERT_EQ(p.unix_ms, now);
            ASSERT_EQ(p.sequence, i);
            ASSERT_GT(id, previous);
            previous = id;
        }
    }
}

// A forward clock jump must only leave a gap: the sequence restarts at 0 at the new time.
TEST(GeneratorTest, ForwardJumpRestartsSequence) {
    GeneratorState state;
    const Node node = node_of(1, 2);
    for (int i = 0; i < 10; ++i) {
        issue(state, kT, node);
    }
    int64_t before_jump = 0;
    EXPECT_EQ(issue(state, kT, node, &before_jump).sequence, 10);

    for (const int64_t jump : {int64_t{2}, int64_t{86400000}, int64_t{10} * 365 * 86400000}) {
        const int64_t now = last_issued(state).unix_ms + jump;
        int64_t id = 0;
        const Parts p = issue(state, now, node, &id);
        EXPECT_EQ(p.unix_ms, now);
        EXPECT_EQ(p.sequence, 0);
        EXPECT_GT(id, before_jump);
        EXPECT_EQ(last_issued(state).unix_ms, now);
        EXPECT_EQ(issue(state, now, node).sequence, 1);
        before_jump = id;
    }
}

// A backwards clock is the classic duplicate-id hazard: refuse, keep state, name the catch-up.
TEST(GeneratorTest, ClockBehindIsRefusedWithoutStateChange) {
    // 1 id (sequence 0 is the edge right after the previous ms), several, and a full ms.
    for (const int issued : {1, 5, kIdsPerMs}) {
        for (const int64_t back : {int64_t{1}, int64_t{30000}}) {
            GeneratorState state;
            const Node node = node_of(9, 21);
            for (int i = 0; i < issued; ++i) {
                issue(state, kT, node);
            }
            const uint64_t before = word(state);

            for (int repeat = 0; repeat < 2; ++repeat) {
                const NextResult r = next_at(state, kT - back, node);
                EXPECT_EQ(r.status, NextStatus::kClockBehind) << issued << " back " << back;
                EXPECT_EQ(r.last_unix_ms, kT) << issued << " back " << back;
                EXPECT_EQ(r.id, 0);
                EXPECT_EQ(word(state), before) << issued << " back " << back;
            }
            EXPECT_EQ(last_issued(state).unix_ms, kT);

            // Back at the old time the sequence continues where it stopped.
            const NextResult again = next_at(state, kT, node);
            if (issued == kIdsPerMs) {
                EXPECT_EQ(again.status, NextStatus::kSequenceExhausted);
                EXPECT_EQ(word(state), before);
            } else {
                ASSERT_EQ(again.status, NextStatus::kIssued);
                const Parts p = decode(again.id).parts;
                EXPECT_EQ(p.unix_ms, kT);
                EXPECT_EQ(p.sequence, issued);
            }
        }
    }
}

// Behind must be judged against the latest ms used, not the first one this state saw.
TEST(GeneratorTest, ClockBehindAfterAdvance) {
    GeneratorState state;
    const Node node = node_of(0, 0);
    issue(state, kT, node);
    issue(state, kT + 1, node);
    const uint64_t before = word(state);
    const NextResult r = next_at(state, kT, node);
    EXPECT_EQ(r.status, NextStatus::kClockBehind);
    EXPECT_EQ(r.last_unix_ms, kT + 1);
    EXPECT_EQ(word(state), before);
}

// A clock outside the 41-bit window cannot be encoded; issuing anyway would wrap the timestamp.
TEST(GeneratorTest, ClockOutOfRangeIsRefusedWithoutStateChange) {
    const Node node = node_of(31, 31);
    const int64_t bad_times[] = {kEpochUnixMs - 1, kMaxUnixMs + 1, kI64Min, kI64Max, 0, -1};
    for (const bool used : {false, true}) {
        GeneratorState state;
        if (used) {
            issue(state, kT, node);
            issue(state, kT, node);
        }
        const uint64_t before = word(state);
        const LastIssued last_before = last_issued(state);
        for (const int64_t now : bad_times) {
            const NextResult r = next_at(state, now, node);
            EXPECT_EQ(r.status, NextStatus::kClockOutOfRange) << now;
            EXPECT_EQ(r.id, 0) << now;
            EXPECT_EQ(word(state), before) << now;
        }
        EXPECT_EQ(last_issued(state).any, last_before.any);
        EXPECT_EQ(last_issued(state).unix_ms, last_before.unix_ms);
        // The state is still usable afterwards.
        EXPECT_EQ(issue(state, kT, node).sequence, used ? 2 : 0);
    }
}

// The very first id at the epoch is 0; the "nothing issued" encoding must not confuse it.
TEST(GeneratorTest, FirstIdAtEpochIsZero) {
    GeneratorState state;
    const NextResult r = next_at(state, kEpochUnixMs, node_of(0, 0));
    ASSERT_EQ(r.status, NextStatus::kIssued);
    EXPECT_EQ(r.id, 0);
    const LastIssued last = last_issued(state);
    EXPECT_TRUE(last.any);
    EXPECT_EQ(last.unix_ms, kEpochUnixMs);
    EXPECT_EQ(issue(state, kEpochUnixMs, node_of(0, 0)).sequence, 1);
    const NextResult behind = next_at(state, kEpochUnixMs - 1, node_of(0, 0));
    EXPECT_EQ(behind.status, NextStatus::kClockOutOfRange);
}

// The last ms of the 41-bit field must give 4,096 ids up to INT64_MAX, never the sign bit.
TEST(GeneratorTest, LastMillisecondOfTheField) {
    GeneratorState state;
    const Node node = node_of(31, 31);
    int64_t previous = -1;
    ASSERT_NO_FATAL_FAILURE(issue_whole_millisecond(state, kMaxUnixMs, 31, 31, &previous));
    EXPECT_EQ(previous, kMaxId);
    const uint64_t before = word(state);
    EXPECT_EQ(next_at(state, kMaxUnixMs, node).status, NextStatus::kSequenceExhausted);
    EXPECT_EQ(next_at(state, kMaxUnixMs + 1, node).status, NextStatus::kClockOutOfRange);
    EXPECT_EQ(next_at(state, kMaxUnixMs, node).status, NextStatus::kSequenceExhausted);
    EXPECT_EQ(word(state), before);
    EXPECT_EQ(last_issued(state).unix_ms, kMaxUnixMs);
    const NextResult behind = next_at(state, kMaxUnixMs - 1, node);
    EXPECT_EQ(behind.status, NextStatus::kClockBehind);
    EXPECT_EQ(behind.last_unix_ms, kMaxUnixMs);
}

// last_issued() feeds introspection and restart logic; it must track issued ids only.
TEST(GeneratorTest, LastIssuedTracksIssuedIds) {
    GeneratorState state;
    const Node node = node_of(2, 3);
    EXPECT_FALSE(last_issued(state).any);

    issue(state, kT, node);
    LastIssued last = last_issued(state);
    EXPECT_TRUE(last.any);
    EXPECT_EQ(last.unix_ms, kT);

    // Filling the ms (the word carries into the next ms) still reports the ms actually used.
    for (int i = 1; i < kIdsPerMs; ++i) {
        issue(state, kT, node);
    }
    EXPECT_EQ(last_issued(state).unix_ms, kT);
    EXPECT_EQ(next_at(state, kT, node).status, NextStatus::kSequenceExhausted);
    EXPECT_EQ(last_issued(state).unix_ms, kT);

    // Refusals leave it alone.
    EXPECT_EQ(next_at(state, kT - 5, node).status, NextStatus::kClockBehind);
    EXPECT_EQ(next_at(state, kMaxUnixMs + 1, node).status, NextStatus::kClockOutOfRange);
    EXPECT_EQ(last_issued(state).unix_ms, kT);

    issue(state, kT + 123, node);
    EXPECT_EQ(last_issued(state).unix_ms, kT + 123);
}

// The node fields keep generators apart; every id, even at sequence 4095, must carry them.
TEST(GeneratorTest, NodeBitsInEveryId) {
    const std::pair<int32_t, int32_t> nodes[] = {{0, 0}, {0, 31}, {31, 0}, {31, 31}, {17, 5}};
    for (const auto &[dc, m] : nodes) {
        GeneratorState state;
        for (int64_t ms = 0; ms < 3; ++ms) {
            int64_t last = 0;
            ASSERT_NO_FATAL_FAILURE(issue_whole_millisecond(state, kT + ms, dc, m, &last));
        }
    }
}

// The pure decision function holds every rule of the layout; each branch is checked directly.
TEST(DecideTest, EachOutcome) {
    const Node node = node_of(7, 13);
    const int64_t first = encode({kT, 7, 13, 0}).id;
    const auto after = [](int64_t id) { return static_cast<uint64_t>(id) + 1; };
    struct Case {
        uint64_t after_last_id;
        int64_t now;
        NextStatus status;
        int64_t id;
        int64_t last_unix_ms;
    };
    const Case cases[] = {
        // Nothing issued yet: the first id of the current millisecond.
        {0, kEpochUnixMs, NextStatus::kIssued, encode({kEpochUnixMs, 7, 13, 0}).id, 0},
        {0, kT, NextStatus::kIssued, first, 0},
        // Same millisecond, same node: the next sequence number.
        {after(first), kT, NextStatus::kIssued, first + 1, 0},
        {after(first + 4094), kT, NextStatus::kIssued, first + 4095, 0},
        // An earlier millisecond (full or not): the first id of now.
        {after(encode({kT - 1, 7, 13, 6}).id), kT, NextStatus::kIssued, first, 0},
        {after(encode({kT - 1, 7, 13, 4095}).id), kT, NextStatus::kIssued, first, 0},
        // All 4,096 ids of this node used this millisecond.
        {after(first + 4095), kT, NextStatus::kSequenceExhausted, 0, 0},
        // A later millisecond was issued: the clock is behind.
        {after(encode({kT + 1, 7, 13, 0}).id), kT, NextStatus::kClockBehind, 0, kT + 1},
        {after(encode({kT + 30000, 0, 0, 0}).id), kT, NextStatus::kClockBehind, 0, kT + 30000},
        // Outside the 41-bit window, whatever the word holds.
        {0, kEpochUnixMs - 1, NextStatus::kClockOutOfRange, 0, 0},
        {after(encode({kT + 1, 7, 13, 0}).id), kEpochUnixMs - 1, NextStatus::kClockOutOfRange, 0,
         0},
        {0, kMaxUnixMs + 1, NextStatus::kClockOutOfRange, 0, 0},
        {0, kI64Min, NextStatus::kClockOutOfRange, 0, 0},
        {0, kI64Max, NextStatus::kClockOutOfRange, 0, 0},
        // The last millisecond of the field, up to the largest id of this node.
        {0, kMaxUnixMs, NextStatus::kIssued, encode({kMaxUnixMs, 7, 13, 0}).id, 0},
        {after(encode({kMaxUnixMs, 7, 13, 4095}).id), kMaxUnixMs, NextStatus::kSequenceExhausted, 0,
         0},
    };
    for (const Case &c : cases) {
        const Decision d = decide(c.after_last_id, node, c.now, kNoLimit);
        EXPECT_EQ(d.status, c.status) << c.after_last_id << " @ " << c.now;
        if (c.status == NextStatus::kIssued) {
            EXPECT_EQ(d.id, c.id) << c.after_last_id << " @ " << c.now;
        }
        if (c.status == NextStatus::kClockBehind) {
            EXPECT_EQ(d.last_unix_ms, c.last_unix_ms) << c.after_last_id << " @ " << c.now;
        }
    }
}

// A reload may change the node ids between two calls in one millisecond: a node that sorts
// higher goes on at once, one that sorts lower waits for the next millisecond, so ids stay
// strictly increasing in the order they are issued.
TEST(GeneratorTest, NodeChangeWithinAMillisecondKeepsIdsIncreasing) {
    GeneratorState state;
    int64_t last = 0;
    issue(state, kT, node_of(5, 5), &last);
    issue(state, kT, node_of(5, 5), &last);
    int64_t higher = 0;
    const Parts higher_parts = issue(state, kT, node_of(5, 6), &higher);
    EXPECT_GT(higher, last);
    EXPECT_EQ(higher_parts.unix_ms, kT);
    EXPECT_EQ(higher_parts.sequence, 0);
    const uint64_t before = word(state);
    EXPECT_EQ(next_at(state, kT, node_of(5, 5)).status, NextStatus::kSequenceExhausted);
    EXPECT_EQ(next_at(state, kT, node_of(0, 31)).status, NextStatus::kSequenceExhausted);
    EXPECT_EQ(word(state), before);
    int64_t lower_next_ms = 0;
    const Parts lower_parts = issue(state, kT + 1, node_of(5, 5), &lower_next_ms);
    EXPECT_GT(lower_next_ms, higher);
    EXPECT_EQ(lower_parts.sequence, 0);
}

// Each branch of the clock-behind policy: the rest of a lease, a bounded wait, a refusal.
TEST(ClockBehindTest, Actions) {
    EXPECT_EQ(clock_behind_action(kT, kT - 1, 0, kT), ClockBehindAction::kWaitRestOfLease);
    EXPECT_EQ(clock_behind_action(kT, kT - kLeaseMs, 0, kT), ClockBehindAction::kWaitRestOfLease);
    EXPECT_EQ(clock_behind_action(kT, kT - kLeaseMs - 1, 0, kT), ClockBehindAction::kRefuse);
    EXPECT_EQ(clock_behind_action(kT, kT - 1, 0, kT - 5), ClockBehindAction::kRefuse);
    EXPECT_EQ(clock_behind_action(kT, kT - 30000, 30000, 0), ClockBehindAction::kWait);
    EXPECT_EQ(clock_behind_action(kT, kT - 30001, 30000, 0), ClockBehindAction::kRefuse);
    EXPECT_EQ(clock_behind_action(kT, kT - 5000, 60000, kT), ClockBehindAction::kWait);
}

// The durable mark bounds every issued timestamp; a refusal past it must leave the state alone.
TEST(GeneratorTest, NothingIsIssuedPastTheIssueLimit) {
    GeneratorState state;
    const Node node = node_of(1, 2);
    FakeClock clock{kT};
    SeenWord seen;
    EXPECT_EQ(next_id(state, node, kT, seen, clock).status, NextStatus::kIssued);
    const uint64_t before = word(state);
    clock.now = kT + 1;
    const NextResult past = next_id(state, node, kT, seen, clock);
    EXPECT_EQ(past.status, NextStatus::kPastIssueLimit);
    EXPECT_EQ(past.now_unix_ms, kT + 1);
    EXPECT_EQ(word(state), before);
    // At the limit itself issuing goes on, and once the limit moves so does the generator.
    clock.now = kT;
    EXPECT_EQ(next_id(state, node, kT, seen, clock).status, NextStatus::kIssued);
    clock.now = kT + 1;
    const NextResult after = next_id(state, node, kT + 1, seen, clock);
    ASSERT_EQ(after.status, NextStatus::kIssued);
    EXPECT_EQ(decode(after.id).parts.unix_ms, kT + 1);
    // A clock behind the issued ids is still reported as behind, whatever the limit.
    clock.now = kT - 5;
    EXPECT_EQ(next_id(state, node, kT - 10, seen, clock).status, NextStatus::kClockBehind);
}

// A restored mark must make its whole millisecond and everything before it unavailable.
TEST(GeneratorTest, RaiseFloorSkipsEverySlotThroughTheMark) {
    GeneratorState state;
    const Node node = node_of(0, 0);
    raise_floor(state, kT);
    EXPECT_EQ(last_issued(state).unix_ms, kT);
    EXPECT_EQ(next_at(state, kT, node).status, NextStatus::kSequenceExhausted);
    const NextResult behind = next_at(state, kT - 1, node);
    EXPECT_EQ(behind.status, NextStatus::kClockBehind);
    EXPECT_EQ(behind.last_unix_ms, kT);
    const Parts first = issue(state, kT + 1, node);
    EXPECT_EQ(first.unix_ms, kT + 1);
    EXPECT_EQ(first.sequence, 0);
    // A lower floor, or one before the epoch, never moves the state back.
    const uint64_t before = word(state);
    raise_floor(state, kT - 1000);
    raise_floor(state, kEpochUnixMs - 1);
    raise_floor(state, kI64Min);
    EXPECT_EQ(word(state), before);
}

// A mark at or past the end of the field (a lease taken in its last second) must leave nothing
// to issue, never wrap the word into the sign bit and make old timestamps look new.
TEST(GeneratorTest, RaiseFloorPastTheFieldUsesUpEveryId) {
    for (const int64_t mark : {kMaxUnixMs, kMaxUnixMs + 1, kMaxUnixMs + kLeaseMs, kI64Max}) {
        GeneratorState state;
        raise_floor(state, mark);
        EXPECT_EQ(word(state), static_cast<uint64_t>(kMaxId) + 1) << mark;
        EXPECT_EQ(last_issued(state).unix_ms, kMaxUnixMs) << mark;
        const NextResult behind = next_at(state, kT, node_of(1, 1));
        EXPECT_EQ(behind.status, NextStatus::kClockBehind) << mark;
        EXPECT_EQ(behind.last_unix_ms, kMaxUnixMs) << mark;
        EXPECT_EQ(next_at(state, kMaxUnixMs, node_of(31, 31)).status,
                  NextStatus::kSequenceExhausted)
            << mark;
    }
    EXPECT_EQ(extended_lease(kMaxUnixMs - 10), kMaxUnixMs);
    EXPECT_EQ(extended_lease(kMaxUnixMs), kMaxUnixMs);
}

// The lease keeps fsyncs rare yet always ahead: extension starts half a lease before the mark.
TEST(LeaseTest, ExtensionPolicy) {
    EXPECT_FALSE(lease_needs_extension(kT, kT + kLeaseMs));
    EXPECT_FALSE(lease_needs_extension(kT, kT + kLeaseMs / 2));
    EXPECT_TRUE(lease_needs_extension(kT + 1, kT + kLeaseMs / 2));
    EXPECT_TRUE(lease_needs_extension(kT + 10, kT));
    EXPECT_EQ(extended_lease(kT), kT + kLeaseMs);
    EXPECT_FALSE(lease_needs_extension(kT, extended_lease(kT)));
    EXPECT_LE(kLeaseMs, 1000) << "a crash restart must wait out less than a second";
}

// A refusal writes nothing, so it is decided on the word loaded from the state and a clock reading
// taken after that load, whatever the caller's guess, and reports that reading.
TEST(GeneratorTest, RefusalsAreDecidedOnTheLoadedWordAndALaterReading) {
    GeneratorState state;
    const Node node = node_of(4, 4);
    int64_t last = 0;
    ASSERT_NO_FATAL_FAILURE(issue_whole_millisecond(state, kT, 4, 4, &last));
    const uint64_t before = word(state);
    for (const uint64_t guess : {uint64_t{0}, before}) {
        for (const int64_t now : {kT, kT - 1, kEpochUnixMs - 1, kMaxUnixMs + 1}) {
            FakeClock clock{now};
            SeenWord seen{guess};
            const NextResult r = next_id(state, node, kNoLimit, seen, clock);
            EXPECT_NE(r.status, NextStatus::kIssued) << now;
            EXPECT_EQ(clock.reads, 2) << now;
            EXPECT_EQ(r.now_unix_ms, now);
            EXPECT_EQ(word(state), before);
            EXPECT_EQ(seen.after_last_id, before);
        }
    }
}

// A stale guess costs a failed swap, never a wrong id, and the caller's guess follows its own id.
TEST(GeneratorTest, StaleGuessStillIssuesTheNextId) {
    GeneratorState state;
    const Node node = node_of(2, 3);
    for (int i = 0; i < 6; ++i) {
        issue(state, kT, node);
    }
    SeenWord seen;  // nothing seen yet, while the state holds six ids
    FakeClock clock{kT};
    const NextResult r = next_id(state, node, kNoLimit, seen, clock);
    ASSERT_EQ(r.status, NextStatus::kIssued);
    EXPECT_EQ(decode(r.id).parts.sequence, 6);
    EXPECT_EQ(clock.reads, 1);
    EXPECT_EQ(seen.after_last_id, word(state));
    EXPECT_EQ(seen.after_last_id, static_cast<uint64_t>(r.id) + 1);
}

// What one call of next_id saw when another caller won the race for the word.
struct Race {
    NextResult result;
    int reads;
    int64_t other_id;
    SeenWord seen;
};

// One call by a caller that issued the last id at kT: its first clock reading is kT, and before
// its swap another caller issues an id at other_now, which every later reading also gives.
Race race_with_another_caller(GeneratorState &state, Node node, int64_t other_now) {
    Race race{};
    FakeClock first{kT};
    EXPECT_EQ(next_id(state, node, kNoLimit, race.seen, first).status, NextStatus::kIssued);
    auto clock = [&]() noexcept -> int64_t {
        if (++race.reads == 1) {
            FakeClock other_clock{other_now};
            SeenWord other_seen;
            race.other_id = next_id(state, node, kNoLimit, other_seen, other_clock).id;
            return kT;
        }
        return other_now;
    };
    race.result = next_id(state, node, kNoLimit, race.seen, clock);
    return race;
}

// A swap lost to a caller with a later reading must retry on a fresh reading, not report a clock
// going back.
TEST(GeneratorTest, LostSwapToALaterMillisecondRereadsTheClock) {
    GeneratorState state;
    const Race race = race_with_another_caller(state, node_of(1, 1), kT + 1);
    ASSERT_EQ(race.result.status, NextStatus::kIssued);
    EXPECT_EQ(race.reads, 2);
    EXPECT_EQ(race.result.now_unix_ms, kT + 1);
    const Parts p = decode(race.result.id).parts;
    EXPECT_EQ(p.unix_ms, kT + 1);
    EXPECT_EQ(p.sequence, 1);
    EXPECT_EQ(decode(race.other_id).parts.unix_ms, kT + 1);
    EXPECT_EQ(decode(race.other_id).parts.sequence, 0);
    EXPECT_EQ(last_issued(state).unix_ms, kT + 1);
}

// A swap lost within the same millisecond retries at once on the word the swap returned, with the
// reading it already has: the retry must not give the cache line away again for a clock read.
TEST(GeneratorTest, LostSwapInTheSameMillisecondKeepsTheReading) {
    GeneratorState state;
    const Race race = race_with_another_caller(state, node_of(1, 1), kT);
    ASSERT_EQ(race.result.status, NextStatus::kIssued);
    EXPECT_EQ(race.reads, 1);
    EXPECT_EQ(decode(race.other_id).parts.sequence, 1);
    EXPECT_EQ(decode(race.result.id).parts.sequence, 2);
    EXPECT_EQ(race.seen.after_last_id, word(state));
}

// Concurrent callers racing on the same exhausted millisecond must share exactly 4,096 ids.
TEST(GeneratorThreadsTest, ExactlyOneMillisecondOfIdsAtAStandingClock) {
    constexpr int kThreads = 4;
    GeneratorState state;
    const Node node = node_of(6, 6);
    std::vector<std::vector<int64_t>> ids(kThreads);
    std::atomic<int> ready{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            ready.fetch_add(1);
            while (ready.load() < kThreads) {
            }
            SeenWord seen;
            // The cap only keeps a broken generator that never exhausts from looping forever.
            while (ids[t].size() <= static_cast<size_t>(kIdsPerMs)) {
                const NextResult r =
                    next_id(state, node, kNoLimit, seen, []() noexcept { return kT; });
                if (r.status != NextStatus::kIssued) {
                    EXPECT_EQ(r.status, NextStatus::kSequenceExhausted);
                    break;
                }
                ids[t].push_back(r.id);
            }
        });
    }
    for (std::thread &th : threads) {
        th.join();
    }
    std::vector<int64_t> all;
    for (const auto &v : ids) {
        EXPECT_EQ(
            std::adjacent_find(v.begin(), v.end(), [](int64_t a, int64_t b) { return a >= b; }),
            v.end());
        all.insert(all.end(), v.begin(), v.end());
    }
    std::sort(all.begin(), all.end());
    ASSERT_EQ(all.size(), static_cast<size_t>(kIdsPerMs));
    EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end());
    EXPECT_EQ(all.front(), encode({kT, 6, 6, 0}).id);
    EXPECT_EQ(all.back(), encode({kT, 6, 6, 4095}).id);
}

// The CAS loop is the whole concurrency story: no duplicates, per-thread order, no false behind.
TEST(GeneratorThreadsTest, NoDuplicatesUnderContention) {
    constexpr int kThreads = 4;
    constexpr size_t kPerThread = 300000;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);

    GeneratorState state;
    const Node node = node_of(11, 22);
    // A fake clock that a ticker advances about once per real millisecond; workers that find
    // the millisecond exhausted push it forward themselves, so progress never depends on the
    // ticker and the test cannot hang.
    std::atomic<int64_t> clock{kT};
    std::atomic<bool> stop{false};
    std::atomic<bool> timed_out{false};
    std::atomic<int64_t> exhausted{0};
    std::atomic<int64_t> behind{0};
    std::atomic<int64_t> out_of_range{0};
    std::atomic<int64_t> wrong_timestamp{0};

    std::thread ticker([&] {
        while (!stop.load()) {
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
            clock.fetch_add(1);
        }
    });

    std::vector<std::vector<int64_t>> ids(kThreads);
    std::vector<std::thread> workers;
    for (int t = 0; t < kThreads; ++t) {
        workers.emplace_back([&, t] {
            std::vector<int64_t> &mine = ids[t];
            mine.reserve(kPerThread);
            const auto read_clock = [&clock]() noexcept { return clock.load(); };
            SeenWord seen;
            uint64_t calls = 0;
            while (mine.size() < kPerThread) {
                if ((++calls & 0xFFFF) == 0 && std::chrono::steady_clock::now() > deadline) {
                    timed_out.store(true);
                    return;
                }
                const NextResult r = next_id(state, node, kNoLimit, seen, read_clock);
                switch (r.status) {
                    case NextStatus::kIssued:
                        if ((r.id >> 22) + kEpochUnixMs != r.now_unix_ms) {
                            wrong_timestamp.fetch_add(1);
                        }
                        mine.push_back(r.id);
                        break;
                    case NextStatus::kSequenceExhausted: {
                        exhausted.fetch_add(1, std::memory_order_relaxed);
                        int64_t expected = r.now_unix_ms;
                        clock.compare_exchange_strong(expected, r.now_unix_ms + 1);
                        break;
                    }
                    case NextStatus::kClockBehind:
                        behind.fetch_add(1);
                        break;
                    case NextStatus::kClockOutOfRange:
                    case NextStatus::kPastIssueLimit:
                        out_of_range.fetch_add(1);
                        return;
                }
            }
        });
    }
    for (std::thread &th : workers) {
        th.join();
    }
    stop.store(true);
    ticker.join();
    ASSERT_FALSE(timed_out.load()) << "the workers ran past the deadline";
    EXPECT_EQ(out_of_range.load(), 0);
    EXPECT_EQ(behind.load(), 0) << "a late clock reading was mistaken for a clock going backwards";
    EXPECT_EQ(wrong_timestamp.load(), 0) << "an id's timestamp differs from the reading used";

    const int64_t final_clock = clock.load();
    std::vector<int64_t> all;
    all.reserve(kThreads * kPerThread);
    for (int t = 0; t < kThreads; ++t) {
        const std::vector<int64_t> &mine = ids[t];
        ASSERT_EQ(mine.size(), kPerThread);
        const auto not_increasing = std::adjacent_find(mine.begin(), mine.end(),
                                                       [](int64_t a, int64_t b) { return a >= b; });
        ASSERT_EQ(not_increasing, mine.end()) << "thread " << t << " went backwards";
        all.insert(all.end(), mine.begin(), mine.end());
    }
    std::sort(all.begin(), all.end());
    const auto duplicate = std::adjacent_find(all.begin(), all.end());
    ASSERT_EQ(duplicate, all.end()) << "duplicate id " << *duplicate;

    for (const int64_t id : all) {
        ASSERT_EQ(id & (int64_t{0x3FF} << 12), node.bits);
    }
    EXPECT_GE(decode(all.front()).parts.unix_ms, kT);
    EXPECT_LE(decode(all.back()).parts.unix_ms, final_clock);
    EXPECT_EQ(last_issued(state).unix_ms, decode(all.back()).parts.unix_ms);
    // 1.2M ids need at least 293 distinct milliseconds at 4,096 per ms.
    EXPECT_GE(decode(all.back()).parts.unix_ms - decode(all.front()).parts.unix_ms,
              static_cast<int64_t>(kThreads * kPerThread / kIdsPerMs) - 1);
    RecordProperty("exhausted", static_cast<int>(exhausted.load()));
}

}  // namespace
}  // namespace snowflake
