// Unit tests of the settled bound: claims, their release, the bound over a state word and its
// slots, and a multi-threaded run in which a reader never sees a bound above an id whose writer
// has not finished.
#include "core/settled.hpp"
#include "core/generator.hpp"
#include "core/layout.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace snowflake {
namespace {

constexpr int64_t kT = 1700000000000;

Node test_node() {
    return make_node(1, 2).node;
}

// One id claimed in a slot at a fixed clock reading.
int64_t issue_claimed(GeneratorState &state, ClaimSlot &slot, SeenWord &seen, int64_t now) {
    auto clock = [now]() noexcept { return now; };
    const NextResult next = next_id_claimed(state, test_node(), kMaxUnixMs, seen, slot, clock);
    EXPECT_EQ(next.status, NextStatus::kIssued);
    return next.id;
}

// With no claim, the bound is one above the last id issued.
TEST(SettledTest, BoundIsTheStateWordWithoutClaims) {
    GeneratorState state;
    ClaimSlot slots[3];
    EXPECT_EQ(settled_bound(state, slots, 3), 0u);
    SeenWord seen;
    ClaimSlot own;
    const int64_t id = issue_claimed(state, own, seen, kT);
    release_claim(own);
    EXPECT_EQ(settled_bound(state, slots, 3), static_cast<uint64_t>(id) + 1);
}

// A claim holds the bound at or below the first id of its transaction until it is released.
TEST(SettledTest, ClaimHoldsTheBoundUntilReleased) {
    GeneratorState state;
    ClaimSlot slots[2];
    SeenWord seen;
    const int64_t first = issue_claimed(state, slots[0], seen, kT);
    const int64_t later = issue_claimed(state, slots[1], seen, kT);
    release_claim(slots[1]);
    EXPECT_LE(settled_bound(state, slots, 2), static_cast<uint64_t>(first));
    EXPECT_GT(later, first);
    release_claim(slots[0]);
    EXPECT_EQ(settled_bound(state, slots, 2), static_cast<uint64_t>(later) + 1);
}

// A stale guess of the state word does not lower the claim below the word: the claim loads it.
TEST(SettledTest, ClaimLoadsTheWordRatherThanTrustAGuess) {
    GeneratorState state;
    ClaimSlot slot;
    SeenWord seen;
    for (int i = 0; i < 10; i++) {
        issue_claimed(state, slot, seen, kT);
        release_claim(slot);
    }
    const uint64_t word = state.after_last_id.load();
    SeenWord stale;
    const int64_t id = issue_claimed(state, slot, stale, kT + 1);
    EXPECT_EQ(claim_of(slot), word);
    EXPECT_GE(static_cast<uint64_t>(id), claim_of(slot));
}

// A second claim in a slot keeps the lower one, as a parallel worker's beside its leader's.
TEST(SettledTest, ClaimKeepsTheLowerOne) {
    ClaimSlot slot;
    claim_from(slot, 100);
    claim_from(slot, 200);
    EXPECT_EQ(claim_of(slot), 100u);
    claim_from(slot, 50);
    EXPECT_EQ(claim_of(slot), 50u);
    release_claim(slot);
    EXPECT_EQ(claim_of(slot), kClaimsNothing);
}

// Writers issue ids, each in a transaction of its own that ends with a tick; a reader samples the
// bound and then the tick. No id below a sampled bound may end after the tick of its sample.
TEST(SettledTest, NoBoundAboveAnUnfinishedWriter) {
    constexpr int kWriters = 4;
    constexpr int kIdsPerWriter = 20000;
    GeneratorState state;
    ClaimSlot slots[kWriters];
    std::atomic<uint64_t> tick{1};
    std::atomic<int64_t> clock_reads{0};
    auto read_clock = [&clock_reads]() noexcept { return kT + clock_reads.fetch_add(1) / 2048; };
    struct Ended {
        int64_t id;
        uint64_t tick;
    };
    std::vector<std::vector<Ended>> ended(kWriters);
    std::atomic<bool> done{false};
    std::vector<std::pair<uint64_t, uint64_t>> samples;
    std::thread reader([&] {
        while (!done.load()) {
            const uint64_t bound = settled_bound(state, slots, kWriters);
            samples.emplace_back(bound, tick.fetch_add(1));
        }
    });
    std::vector<std::thread> writers;
    for (int w = 0; w < kWriters; w++) {
        writers.emplace_back([&, w] {
            SeenWord seen;
            for (int i = 0; i < kIdsPerWriter; i++) {
                NextResult next;
                do {
                    next =
                        next_id_claimed(state, test_node(), kMaxUnixMs, seen, slots[w], read_clock);
                } while (next.status != NextStatus::kIssued);
                ended[w].push_back({next.id, tick.fetch_add(1)});
                release_claim(slots[w]);
            }
        });
    }
    for (std::thread &writer : writers) {
        writer.join();
    }
    done.store(true);
    reader.join();
    ASSERT_FALSE(samples.empty());
    // The earliest tick of a sample whose bound is above each id: sorted by bound, then the least
    // tick from each sample on.
    std::sort(samples.begin(), samples.end());
    std::vector<uint64_t> earliest_from(samples.size() + 1, UINT64_MAX);
    for (size_t i = samples.size(); i-- > 0;) {
        earliest_from[i] = std::min(earliest_from[i + 1], samples[i].second);
    }
    for (const std::vector<Ended> &writer : ended) {
        for (const Ended &end : writer) {
            const auto above =
                std::upper_bound(samples.begin(), samples.end(),
                                 std::make_pair(static_cast<uint64_t>(end.id), UINT64_MAX));
            ASSERT_LT(end.tick, earliest_from[above - samples.begin()])
                << "id " << end.id << " ended after a bound above it was read";
        }
    }
}

}  // namespace
}  // namespace snowflake
