// The rules of the floor from stored keys (README "Operations", doc/operations.md "Guarantees"):
// which stored keys can collide with the ids this server issues from a clock reading on, and
// which of those may hold generation back. Pure C++17, so that the glue only reads tables.
#pragma once

#include <cstdint>
#include <type_traits>

#include "core/generator.hpp"
#include "core/layout.hpp"

namespace snowflake {

// The datacenter and machine fields of an id, in place: a key whose fields differ from this
// server's can never equal an id it issues.
inline constexpr int64_t kNodeFieldsMask = ((int64_t{1} << (kDatacenterBits + kMachineBits)) - 1)
                                           << kMachineShift;

// The keys of this server's node pair that matter at a clock reading: those from its millisecond
// up to the window's end raise the generator, which holds generation back until the clock passes
// them; one further ahead stops generation until the clock passes it or a superuser releases it,
// so that a key this server issued with a clock far ahead is never issued again, and a key a role
// planted cannot hold generation back unseen. Keys before the reading need no look: the generator
// is raised through the millisecond before it instead.
struct KeyWindow {
    int64_t lowest_id;     // the first id of the clock's millisecond
    int64_t highest_id;    // the last id of the window's end; below lowest_id once it has passed
    int64_t last_unix_ms;  // the millisecond of highest_id
    int64_t node_fields;
};

// The window's end is fixed by the first read after a start, max_lead_ms past that clock reading,
// so that reads of later databases (or of the same one again) cannot move it on.
int64_t key_window_end(int64_t first_read_unix_ms, int64_t max_lead_ms) noexcept;

KeyWindow key_window(int64_t now_unix_ms, int64_t window_end_unix_ms, Node node) noexcept;

// The millisecond the generator is raised through for the highest key found in the window (-1
// when none): that key's, or the one before the clock reading, whichever is later.
int64_t key_floor_through_ms(const KeyWindow &window, int64_t now_unix_ms,
                             int64_t highest_key) noexcept;

// The highest keys of this server's pair that a read found in the window and beyond it (-1 for
// none), and how many lie beyond it.
struct FoundKeys {
    int64_t in_window = -1;
    int64_t beyond_window = -1;
    uint64_t beyond_window_keys = 0;
};

// Whether a stored value is a key of this server's pair at or after the clock's millisecond, the
// only ones a read must look at further.
bool may_hold_generation(const KeyWindow &window, int64_t value) noexcept;

// Counts one stored value: a key of this server's pair in the window or beyond it raises the
// matching highest key, and one beyond it is counted; any other value (another pair's, one
// before the clock) changes nothing.
void note_stored_key(const KeyWindow &window, int64_t value, FoundKeys *found) noexcept;

// Whether a key beyond the window still stops generation at a clock reading: until the clock has
// left the key's millisecond, an id the generator issues could equal it.
bool beyond_key_stops_generation(int64_t key, int64_t now_unix_ms) noexcept;

// The millisecond of a key, for the generator to be raised through it.
int64_t unix_ms_of_key(int64_t key) noexcept;

static_assert(std::is_trivially_destructible_v<FoundKeys>,
              "the keys found live across ereport calls and must own nothing");

static_assert(std::is_trivially_destructible_v<KeyWindow>,
              "a window lives across ereport calls and must own nothing");

}  // namespace snowflake
