// The rules that every move of the durable mark and every raise of the generator obey. The glue
// has one function for each (src/pg/mark/durable_mark.cpp), and both ask these rules first. The
// rules are pure, so that a unit test can check them for every input:
// - a mark is written only above the highest mark known, and only inside the layout's range;
// - a read of the settled bound moves the generator no further than an id drawn at the same
//   clock reading would, and never past the mark;
// - a bound is never above what the mark covers, so a restart never issues an id below it.
#pragma once

#include <cstdint>
#include <type_traits>

#include "core/generator.hpp"
#include "core/layout.hpp"

namespace snowflake {

// Whether a clock reading is a timestamp the layout can hold.
constexpr bool clock_in_layout(int64_t unix_ms) noexcept {
    return unix_ms >= kEpochUnixMs && unix_ms <= kMaxUnixMs;
}

enum class MarkMove : uint8_t {
    kCovered,     // the highest mark known already covers the millisecond: nothing to write
    kWrite,       // write mark_unix_ms, which is above the highest mark known
    kOutOfRange,  // the millisecond is no timestamp of the layout: nothing may be written
};

struct MarkPlan {
    MarkMove move;
    int64_t mark_unix_ms;
};

// The mark that covers a millisecond, given the highest mark this server knows to be durable
// (restored from the file, replayed from WAL, or written since the start).
MarkPlan plan_mark(int64_t highest_known_unix_ms, int64_t cover_through_unix_ms) noexcept;

// The lease an id or a bound at this clock reading needs: kLeaseMs past the clock, at most the
// layout's end; nothing for a clock outside the layout.
MarkPlan plan_lease(int64_t highest_known_unix_ms, int64_t now_unix_ms) noexcept;

// Whether a read of the settled bound may move the generator at this clock reading: only where
// an id drawn now would be issued at once. Not while the clock is behind the last timestamp, and
// not for a clock outside the layout.
bool clock_moves_generator(uint64_t after_last_id, Node node, int64_t now_unix_ms) noexcept;

// How far such a read raises the generator once the mark is extended: through the millisecond
// before the clock, as an id drawn now would leave it, but never past the mark.
int64_t quiet_raise_through(int64_t now_unix_ms, int64_t mark_unix_ms) noexcept;

// The settled bound a reader may be given: the lowest of the state word and the claims, never
// above what the mark covers, and never above the largest id (so never negative).
int64_t covered_bound(uint64_t lowest_of_word_and_claims, int64_t mark_unix_ms) noexcept;

static_assert(std::is_trivially_destructible_v<MarkPlan>,
              "plans cross the ereport boundary and must own nothing");

}  // namespace snowflake
