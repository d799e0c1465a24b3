#include "core/settled.hpp"

#include <algorithm>

namespace snowflake {

void claim_from(ClaimSlot &slot, uint64_t after_last) noexcept {
    uint64_t claimed = slot.lowest.load(std::memory_order_relaxed);
    while (after_last < claimed &&
           !slot.lowest.compare_exchange_weak(claimed, after_last, std::memory_order_seq_cst,
                                              std::memory_order_relaxed)) {
    }
}

void release_claim(ClaimSlot &slot) noexcept {
    slot.lowest.store(kClaimsNothing, std::memory_order_release);
}

uint64_t claim_of(const ClaimSlot &slot) noexcept {
    return slot.lowest.load(std::memory_order_acquire);
}

uint64_t settled_bound(const GeneratorState &state, const ClaimSlot *slots, size_t count) noexcept {
    uint64_t bound = state.after_last_id.load(std::memory_order_acquire);
    for (size_t i = 0; i < count; i++) {
        bound = std::min(bound, claim_of(slots[i]));
    }
    return bound;
}

}  // namespace snowflake
