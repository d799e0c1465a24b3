// Unit tests of the rules every write of the durable mark and every raise of the generator obey
// (core/mark_rules.hpp): each rule over every combination of edge values and a wide random
// sample, then a model of a server's life (ids, bound reads, restarts, clock steps anywhere,
// inside and outside the layout) that checks the rules together.
#include "core/mark_rules.hpp"
#include "core/generator.hpp"
#include "core/layout.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace snowflake {
namespace {

constexpr int64_t kI64Min = std::numeric_limits<int64_t>::min();
constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kT = 1700000000000;

// Timestamps at and around every edge: the epoch, the layout's end, a lease, and far outside.
std::vector<int64_t> edge_times() {
    std::vector<int64_t> times = {kI64Min, -1, 0, 1, kI64Max};
    for (int64_t base : {kEpochUnixMs, kT, kMaxUnixMs - kLeaseMs, kMaxUnixMs}) {
        for (int64_t delta :
             std::vector<int64_t>{-kLeaseMs - 1, -kLeaseMs, -kLeaseMs / 2 - 1, -kLeaseMs / 2, -2,
                                  -1, 0, 1, 2, kLeaseMs / 2, kLeaseMs, kLeaseMs + 1}) {
            times.push_back(base + delta);
        }
    }
    return times;
}

// The edge times, then as many random ones, half of them inside the layout.
std::vector<int64_t> sample_times(std::mt19937_64 &random, size_t random_count) {
    std::vector<int64_t> times = edge_times();
    std::uniform_int_distribution<int64_t> inside(kEpochUnixMs, kMaxUnixMs);
    for (size_t i = 0; i < random_count; i++) {
        times.push_back(i % 2 == 0 ? inside(random) : static_cast<int64_t>(random()));
    }
    return times;
}

// A state word as a generator leaves it: empty, or one more than an id of some node.
std::vector<uint64_t> sample_words(const std::vector<int64_t> &times) {
    std::vector<uint64_t> words = {0, uint64_t{1} << 63};
    for (int64_t t : times) {
        if (clock_in_layout(t)) {
            const int64_t first = (t - kEpochUnixMs) << kTimestampShift;
            words.push_back(static_cast<uint64_t>(first) + 1);
            words.push_back(static_cast<uint64_t>(first | kBelowTimestampMask) + 1);
        }
    }
    return words;
}

Node node_of(int32_t datacenter, int32_t machine) {
    return make_node(datacenter, machine).node;
}

TEST(MarkRulesTest, APlannedMarkIsNeverBelowTheHighestKnownNorOutsideTheLayout) {
    std::mt19937_64 random(1);
    const std::vector<int64_t> times = sample_times(random, 600);
    for (int64_t known : times) {
        for (int64_t cover : times) {
            const MarkPlan plan = plan_mark(known, cover);
            switch (plan.move) {
                case MarkMove::kWrite:
                    ASSERT_GT(plan.mark_unix_ms, known);
                    ASSERT_EQ(plan.mark_unix_ms, cover);
                    ASSERT_TRUE(clock_in_layout(plan.mark_unix_ms));
                    break;
                case MarkMove::kCovered:
                    ASSERT_LE(cover, known);
                    ASSERT_TRUE(clock_in_layout(cover));
                    break;
                case MarkMove::kOutOfRange:
                    ASSERT_FALSE(clock_in_layout(cover));
                    break;
            }
        }
    }
}

TEST(MarkRulesTest, ALeaseCoversItsClockAndNeverPassesTheLayoutsEnd) {
    std::mt19937_64 random(2);
    const std::vector<int64_t> times = sample_times(random, 600);
    for (int64_t known : times) {
        for (int64_t now : times) {
            const MarkPlan plan = plan_lease(known, now);
            if (!clock_in_layout(now)) {
                ASSERT_EQ(plan.move, MarkMove::kOutOfRange) << now;
                continue;
            }
            ASSERT_NE(plan.move, MarkMove::kOutOfRange);
            if (plan.move == MarkMove::kWrite) {
                ASSERT_GT(plan.mark_unix_ms, known);
                ASSERT_GE(plan.mark_unix_ms, now);
                ASSERT_LE(plan.mark_unix_ms, kMaxUnixMs);
            } else {
                ASSERT_GE(known, extended_lease(now));
            }
        }
    }
}

TEST(MarkRulesTest, ARaiseNeverLowersTheWord) {
    std::mt19937_64 random(3);
    const std::vector<int64_t> times = sample_times(random, 300);
    for (uint64_t before : sample_words(times)) {
        for (int64_t through : times) {
            GeneratorState state;
            state.after_last_id.store(before);
            raise_floor(state, through);
            ASSERT_GE(state.after_last_id.load(), before);
            ASSERT_GE(state.after_last_id.load(), word_through(through));
        }
    }
}

TEST(MarkRulesTest, ABoundReadMovesTheGeneratorOnlyAsAnIdAtTheSameClockWould) {
    std::mt19937_64 random(4);
    const std::vector<int64_t> times = sample_times(random, 120);
    const Node node = node_of(3, 7);
    for (uint64_t word : sample_words(times)) {
        for (int64_t now : times) {
            const bool moves = clock_moves_generator(word, node, now);
            ASSERT_EQ(moves, decide(word, node, now, kMaxUnixMs).status == NextStatus::kIssued);
            if (!moves) {
                continue;
            }
            ASSERT_TRUE(clock_in_layout(now));
            for (int64_t mark : {now - 1, now, extended_lease(now), kEpochUnixMs - 1}) {
                const int64_t through = quiet_raise_through(now, mark);
                ASSERT_LT(through, now);
                ASSERT_LE(through, mark);
                GeneratorState state;
                state.after_last_id.store(word);
                raise_floor(state, through);
                // An id drawn at the same clock reading is still issued after the raise.
                ASSERT_EQ(decide(state.after_last_id.load(), node, now, kMaxUnixMs).status,
                          NextStatus::kIssued);
            }
        }
    }
}

TEST(MarkRulesTest, ABoundIsCoveredByTheMarkAndNeverNegative) {
    std::mt19937_64 random(5);
    const std::vector<int64_t> times = sample_times(random, 300);
    const Node node = node_of(31, 31);
    for (uint64_t lowest : sample_words(times)) {
        for (int64_t mark : times) {
            const int64_t bound = covered_bound(lowest, mark);
            ASSERT_GE(bound, 0);
            ASSERT_LE(static_cast<uint64_t>(bound), lowest);
            // A restart from the mark raises the generator through it: every id it issues then,
            // at any clock, is at or above the bound.
            GeneratorState restarted;
            raise_floor(restarted, mark);
            const uint64_t after_restart = restarted.after_last_id.load();
            if (after_restart != 0 && after_restart <= static_cast<uint64_t>(kMaxId)) {
                const int64_t now = ((static_cast<int64_t>(after_restart) - 1) >> kTimestampShift) +
                                    kEpochUnixMs + 1;
                const Decision next = decide(after_restart, node, now, kMaxUnixMs);
                if (next.status == NextStatus::kIssued) {
                    ASSERT_GE(next.id, bound);
                }
            }
        }
    }
}

// A server as the glue runs it, built from the rules alone: the mark file, the shared values,
// and the calls that move them. A restart forgets memory and starts from the file.
struct ModelServer {
    int64_t file_mark = 0;  // 0: no file yet
    int64_t known = 0;      // the highest mark known durable (logged_mark_ms)
    int64_t limit = 0;      // the issue limit (durable_mark_ms)
    GeneratorState state;
    Node node = node_of(1, 2);

    // The one write: never below what is known.
    void write(const MarkPlan &plan) {
        if (plan.move == MarkMove::kWrite) {
            file_mark = plan.mark_unix_ms;
            known = std::max(known, plan.mark_unix_ms);
            limit = std::max(limit, plan.mark_unix_ms);
        }
    }

    void restart() {
        known = file_mark;
        limit = file_mark;
        state.after_last_id.store(0);
        raise_floor(state, file_mark);
    }

    // snowflake_nextval() at one clock reading: an id, or nothing.
    bool next(int64_t now, int64_t *id) {
        SeenWord seen;
        for (int attempt = 0; attempt < 2; attempt++) {
            const NextResult result = next_id(state, node, limit, seen, [now] { return now; });
            if (result.status == NextStatus::kIssued) {
                *id = result.id;
                if (lease_needs_extension(now, known)) {
                    write(plan_lease(known, now));
                }
                return true;
            }
            if (result.status != NextStatus::kPastIssueLimit) {
                return false;
            }
            write(plan_lease(known, now));
        }
        return false;
    }

    // The floor from stored keys: a key ahead of the clock raises the generator in memory only.
    void raise_by_key(int64_t key_unix_ms) { raise_floor(state, key_unix_ms); }

    // snowflake_settled_bound() on a quiet server at one clock reading.
    int64_t bound(int64_t now) {
        if (clock_moves_generator(state.after_last_id.load(), node, now)) {
            if (lease_needs_extension(now, known)) {
                write(plan_lease(known, now));
            }
            raise_floor(state, quiet_raise_through(now, limit));
        }
        return covered_bound(state.after_last_id.load(), limit);
    }
};

// The millisecond of an id.
int64_t unix_ms_of(int64_t id) {
    return (id >> kTimestampShift) + kEpochUnixMs;
}

TEST(MarkRulesTest, NoLifeOfAServerReissuesAnIdOrLowersTheMarkOrABound) {
    std::mt19937_64 random(6);
    std::uniform_int_distribution<int> action(0, 10);
    std::uniform_int_distribution<int64_t> step(-7200000, 7200000);
    for (int life = 0; life < 300; life++) {
        ModelServer server;
        int64_t now = kT;
        int64_t highest_id = -1;
        int64_t highest_bound = 0;
        int64_t highest_file = 0;
        // The latest time the generator may stand at: an id's, a bound's clock before it, or the
        // mark a restart starts from. An id at a later clock inside the layout must be issued.
        int64_t latest_ms = 0;
        for (int call = 0; call < 400; call++) {
            switch (action(random)) {
                case 0:
                    server.restart();
                    latest_ms = std::max(latest_ms, server.file_mark);
                    break;
                case 1:
                    now += step(random);
                    break;
                case 2:
                    // A clock past the layout's end or before the epoch, as a bad clock source
                    // gives, for one call.
                    now = random() % 2 == 0 ? kMaxUnixMs + 1 + static_cast<int64_t>(random() % 9)
                                            : kEpochUnixMs - 1;
                    break;
                case 3:
                    now = kT + call * 10;
                    break;
                case 10:
                    // A stored key up to an hour ahead of the clock, as after a start without
                    // the mark file; the restart after it forgets it, as the key may be gone.
                    if (clock_in_layout(now)) {
                        const int64_t key_ms =
                            std::min(now + step(random) / 2 + 3600000, kMaxUnixMs);
                        server.raise_by_key(key_ms);
                        latest_ms = std::max(latest_ms, key_ms);
                    }
                    break;
                case 4:
                case 5: {
                    const int64_t bound = server.bound(now);
                    ASSERT_GE(bound, highest_bound) << "a bound went down";
                    highest_bound = bound;
                    if (clock_in_layout(now)) {
                        latest_ms = std::max(latest_ms, now - 1);
                    }
                    break;
                }
                default: {
                    int64_t id = 0;
                    if (server.next(now, &id)) {
                        ASSERT_GT(id, highest_id) << "an id was issued again or out of order";
                        ASSERT_GE(id, highest_bound) << "an id below a bound a reader holds";
                        highest_id = id;
                        latest_ms = std::max(latest_ms, unix_ms_of(id));
                    } else {
                        ASSERT_FALSE(clock_in_layout(now) && now > latest_ms + 1)
                            << "no id at a clock past everything issued";
                    }
                    now += 1;
                }
            }
            ASSERT_GE(server.file_mark, highest_file) << "the mark file went down";
            ASSERT_TRUE(server.file_mark == 0 || clock_in_layout(server.file_mark));
            highest_file = server.file_mark;
        }
    }
}

}  // namespace
}  // namespace snowflake
