// The id generator: a lock-free state machine over one 64-bit word that may live in shared memory.
// The clock is a parameter, so the caller owns waiting (it must stay cancellable) and tests can
// move time by hand.
#pragma once

#include <atomic>
#include <cstdint>
#include <type_traits>

#include "core/codec.hpp"
#include "core/layout.hpp"

namespace snowflake {

// The word holds one more than the last id issued, so 0 means nothing was issued yet. The whole
// id, node fields included, is kept so that ids stay strictly increasing even when a reload
// changes the node ids between two calls in the same millisecond.
struct GeneratorState {
    std::atomic<uint64_t> after_last_id{0};
};

static_assert(std::atomic<uint64_t>::is_always_lock_free,
              "the state word is shared between processes and must not hide a lock");
static_assert(std::is_standard_layout_v<GeneratorState>, "the state is placed in shared memory");

// This node's datacenter and machine fields, already shifted into place.
struct Node {
    int64_t bits;
};

struct NodeResult {
    CodecStatus status;
    Node node;
};

enum class NextStatus : uint8_t {
    kIssued,             // id holds a new id
    kSequenceExhausted,  // no id left this millisecond for this node: retry when the clock moves on
    kClockBehind,        // the clock reads before last_unix_ms: refused, state untouched
    kClockOutOfRange,    // the clock is before the epoch or past the 41-bit field
    kPastIssueLimit,     // the clock is past the durable mark: extend it, then retry
};

struct NextResult {
    NextStatus status;
    int64_t id;
    int64_t now_unix_ms;   // the clock reading the outcome is based on
    int64_t last_unix_ms;  // with kClockBehind: the timestamp of the last id issued
};

// What the state word allows at one clock reading: the id to claim, or why there is none.
struct Decision {
    NextStatus status;
    int64_t id;
    int64_t last_unix_ms;
};

struct LastIssued {
    bool any;
    int64_t unix_ms;
};

// Validates node ids once, so the per-id path only ORs in ready bits.
NodeResult make_node(int32_t datacenter_id, int32_t machine_id) noexcept;

// The rules of the layout for one state word, one node and one clock reading; it writes nothing.
// No id is ever issued with a timestamp past issue_limit_unix_ms (the durable mark).
Decision decide(uint64_t after_last_id, Node node, int64_t now_unix_ms,
                int64_t issue_limit_unix_ms) noexcept;

// What one caller last saw in the state word. Its first compare-and-swap is tried against this
// guess instead of a fresh load: a caller that issued the last id then needs no load at all, and
// one that did not pays one cache-line transfer (the failed swap, which returns the word with the
// line held for writing) instead of two (a shared load, then the swap).
struct SeenWord {
    uint64_t after_last_id = 0;
};

// Issues the next id, in the common case with one compare-and-swap; a refusal (exhausted, clock
// behind, out of range, past the limit) never writes the state. read_clock() returns Unix ms.
// A refusal is only ever decided on the word loaded from the state and a clock reading taken
// after that load: every timestamp in the word was read before this reading, so a reading that is
// merely late (the process was preempted) is never mistaken for a clock that moved backwards.
// An id, though, may be decided on a guess or on the word a failed swap returned, with the clock
// reading taken before it: the swap succeeds only if the word still holds what the id was decided
// on, and the id then follows that word, while its timestamp is a reading no older than the call.
// Retrying a failed swap without reading the clock again keeps the window in which another
// process can take the cache line to a few instructions.
template <typename ReadClock>
NextResult next_id(GeneratorState &state, Node node, int64_t issue_limit_unix_ms, SeenWord &seen,
                   ReadClock &&read_clock) noexcept {
    uint64_t after_last = seen.after_last_id;
    int64_t now_unix_ms = read_clock();
    bool fresh = false;  // after_last was loaded, then the clock read
    for (;;) {
        const Decision decision = decide(after_last, node, now_unix_ms, issue_limit_unix_ms);
        if (decision.status == NextStatus::kIssued) {
            const uint64_t after_id = static_cast<uint64_t>(decision.id) + 1;
            if (state.after_last_id.compare_exchange_strong(
                    after_last, after_id, std::memory_order_acq_rel, std::memory_order_acquire)) {
                seen.after_last_id = after_id;
                return {NextStatus::kIssued, decision.id, now_unix_ms, 0};
            }
            fresh = false;
        } else if (fresh) {
            seen.after_last_id = after_last;
            return {decision.status, 0, now_unix_ms, decision.last_unix_ms};
        } else {
            after_last = state.after_last_id.load(std::memory_order_acquire);
            now_unix_ms = read_clock();
            fresh = true;
        }
    }
}

// The timestamp of the last id issued from this state, for introspection.
LastIssued last_issued(const GeneratorState &state) noexcept;

// One more than the last id of a millisecond, whatever the node: the state word of a generator
// raised through it, and the highest bound a mark at it covers. 0 before the epoch; 2^63 (every
// id used) at the layout's end and past it.
uint64_t word_through(int64_t through_unix_ms) noexcept;

// Marks every id up to and including the millisecond through_unix_ms as used, so that a state
// restored from a durable mark (or a standby's state, from the primary's marks) never reissues.
// It never lowers the word. Only the glue's one raise of the generator calls it.
void raise_floor(GeneratorState &state, int64_t through_unix_ms) noexcept;

// The durable mark is a lease: a timestamp at or past every timestamp issued. It is extended to
// kLeaseMs past the clock once the clock comes within half of that of it, so that at full speed
// it is written about twice a second and a crash restart waits out less than kLeaseMs.
inline constexpr int64_t kLeaseMs = 1000;

// Whether a clock reading is close enough to the mark that the mark should move on.
constexpr bool lease_needs_extension(int64_t now_unix_ms, int64_t mark_unix_ms) noexcept {
    return now_unix_ms + kLeaseMs / 2 > mark_unix_ms;
}

// The mark an extension at this clock reading writes, never past the timestamp field.
constexpr int64_t extended_lease(int64_t now_unix_ms) noexcept {
    return now_unix_ms < kMaxUnixMs - kLeaseMs ? now_unix_ms + kLeaseMs : kMaxUnixMs;
}

enum class ClockBehindAction : uint8_t {
    kWaitRestOfLease,  // nothing was issued since the state was raised to a lease: not a step back
    kWait,             // a step back within the configured bound
    kRefuse,           // a step back beyond it
};

// What a clock reading behind the last timestamp calls for. While the last timestamp is still
// the lease the state was raised to (lease_floor_unix_ms), nothing was issued since, and a gap of
// up to a lease is the rest of that lease; anything else is a clock that moved backwards.
constexpr ClockBehindAction clock_behind_action(int64_t last_unix_ms, int64_t now_unix_ms,
                                                int64_t max_wait_ms,
                                                int64_t lease_floor_unix_ms) noexcept {
    const int64_t gap_ms = last_unix_ms - now_unix_ms;
    if (last_unix_ms == lease_floor_unix_ms && gap_ms <= kLeaseMs) {
        return ClockBehindAction::kWaitRestOfLease;
    }
    return gap_ms <= max_wait_ms ? ClockBehindAction::kWait : ClockBehindAction::kRefuse;
}

static_assert(std::is_trivially_destructible_v<NextResult> &&
                  std::is_trivially_destructible_v<NodeResult> &&
                  std::is_trivially_destructible_v<Decision>,
              "results cross the ereport boundary and must own nothing");

}  // namespace snowflake
