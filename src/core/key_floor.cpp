// The floor from stored keys: the window of keys that matter at a clock reading.

#include "core/key_floor.hpp"

#include <algorithm>

#include "core/codec.hpp"
#include "core/layout.hpp"

namespace snowflake {

int64_t key_window_end(int64_t first_read_unix_ms, int64_t max_lead_ms) noexcept {
    const int64_t lead_ms = std::max<int64_t>(max_lead_ms, 0);
    return first_read_unix_ms > kMaxUnixMs - lead_ms ? kMaxUnixMs : first_read_unix_ms + lead_ms;
}

KeyWindow key_window(int64_t now_unix_ms, int64_t window_end_unix_ms, Node node) noexcept {
    const int64_t last_ms = std::max(now_unix_ms - 1, std::min(window_end_unix_ms, kMaxUnixMs));
    return {min_id_at_or_after(now_unix_ms), max_id_at_or_before(last_ms), last_ms, node.bits};
}

int64_t key_floor_through_ms(const KeyWindow &window, int64_t now_unix_ms,
                             int64_t highest_key) noexcept {
    const int64_t before_clock_ms = now_unix_ms - 1;
    if (highest_key < window.lowest_id || highest_key > window.highest_id) {
        return before_clock_ms;
    }
    return std::max(before_clock_ms, unix_ms_of_key(highest_key));
}

bool may_hold_generation(const KeyWindow &window, int64_t value) noexcept {
    return (value & kNodeFieldsMask) == window.node_fields && value >= window.lowest_id;
}

void note_stored_key(const KeyWindow &window, int64_t value, FoundKeys *found) noexcept {
    if (!may_hold_generation(window, value)) {
        return;
    }
    const bool beyond = value > window.highest_id;
    int64_t &highest = beyond ? found->beyond_window : found->in_window;
    highest = std::max(highest, value);
    found->beyond_window_keys += beyond ? 1 : 0;
}

int64_t unix_ms_of_key(int64_t key) noexcept {
    return (key >> kTimestampShift) + kEpochUnixMs;
}

bool beyond_key_stops_generation(int64_t key, int64_t now_unix_ms) noexcept {
    return key >= 0 && now_unix_ms <= unix_ms_of_key(key);
}

}  // namespace snowflake
