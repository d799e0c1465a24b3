// The settled bound: an id below which every id this server issued belongs to a transaction that
// has ended. Ids are issued in one order and committed in another, so a reader that follows a
// table by id and moves its cursor past a row can miss a row with a smaller id committed later.
// Reading only below the bound closes that gap.
//
// Each transaction that draws ids claims, in a slot of its own, every id from the state word it
// is about to swap against; the claim goes when the transaction has ended and its end is visible.
// The bound is the state word, loaded first, or the lowest claim, loaded after it.
//
// Why no reader sees a bound above an id whose transaction has not ended: a claim is written
// before the swap that issues the id, and the swap is a release. A reader whose acquire load of
// the state word returns that swap's value, or any later one (every later write to the word is a
// read-modify-write, which continues the release sequence), synchronizes with it, so its later
// load of the slot returns the claim or a later write: a lower claim, or the release that follows
// the end of the transaction. A reader whose load returns an earlier value gets a bound at or
// below that value, and every id issued after it is at or above it.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "core/generator.hpp"

namespace snowflake {

// A slot that claims nothing.
inline constexpr uint64_t kClaimsNothing = UINT64_MAX;

// One transaction's claim: it may own ids from `lowest` on until it ends. One per backend (its
// parallel workers claim in their leader's) and one per prepared transaction, in shared memory,
// each on a cache line of its own, so that one backend's claim does not slow its neighbour's.
struct alignas(64) ClaimSlot {
    std::atomic<uint64_t> lowest{kClaimsNothing};
};

static_assert(std::atomic<uint64_t>::is_always_lock_free, "slots are shared between processes");
static_assert(std::is_standard_layout_v<ClaimSlot>, "slots are placed in shared memory");

// Claims every id from after_last on, keeping a lower claim already there (its leader's, or an
// earlier one of the same transaction).
void claim_from(ClaimSlot &slot, uint64_t after_last) noexcept;

// Ends a slot's claim, once the end of its transaction is visible.
void release_claim(ClaimSlot &slot) noexcept;

// The lowest claim of a slot, or kClaimsNothing.
uint64_t claim_of(const ClaimSlot &slot) noexcept;

// The bound over a state word and every slot: loads the word, then the slots.
uint64_t settled_bound(const GeneratorState &state, const ClaimSlot *slots, size_t count) noexcept;

// Issues the next id as next_id() does, with the claim made first: the word is loaded, claimed,
// and only then swapped against, so that the claim is at or below the id.
template <typename ReadClock>
NextResult next_id_claimed(GeneratorState &state, Node node, int64_t issue_limit_unix_ms,
                           SeenWord &seen, ClaimSlot &slot, ReadClock &&read_clock) noexcept {
    seen.after_last_id = state.after_last_id.load(std::memory_order_acquire);
    claim_from(slot, seen.after_last_id);
    return next_id(state, node, issue_limit_unix_ms, seen, read_clock);
}

}  // namespace snowflake
