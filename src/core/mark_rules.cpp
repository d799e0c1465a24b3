#include "core/mark_rules.hpp"

#include <algorithm>

#include "core/generator.hpp"
#include "core/layout.hpp"

namespace snowflake {

MarkPlan plan_mark(int64_t highest_known_unix_ms, int64_t cover_through_unix_ms) noexcept {
    if (!clock_in_layout(cover_through_unix_ms)) {
        return {MarkMove::kOutOfRange, 0};
    }
    if (cover_through_unix_ms <= highest_known_unix_ms) {
        return {MarkMove::kCovered, highest_known_unix_ms};
    }
    return {MarkMove::kWrite, cover_through_unix_ms};
}

MarkPlan plan_lease(int64_t highest_known_unix_ms, int64_t now_unix_ms) noexcept {
    if (!clock_in_layout(now_unix_ms)) {
        return {MarkMove::kOutOfRange, 0};
    }
    return plan_mark(highest_known_unix_ms, extended_lease(now_unix_ms));
}

bool clock_moves_generator(uint64_t after_last_id, Node node, int64_t now_unix_ms) noexcept {
    // No issue limit: the question is only what the clock allows; the caller extends the mark.
    return decide(after_last_id, node, now_unix_ms, kMaxUnixMs).status == NextStatus::kIssued;
}

int64_t quiet_raise_through(int64_t now_unix_ms, int64_t mark_unix_ms) noexcept {
    return std::min(now_unix_ms - 1, mark_unix_ms);
}

int64_t covered_bound(uint64_t lowest_of_word_and_claims, int64_t mark_unix_ms) noexcept {
    const uint64_t bound = std::min(lowest_of_word_and_claims, word_through(mark_unix_ms));
    return static_cast<int64_t>(std::min(bound, static_cast<uint64_t>(kMaxId)));
}

}  // namespace snowflake
