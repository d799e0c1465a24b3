// Unit tests of waiting for the next millisecond: who watches the boundary, and how long each
// waiter sleeps before it looks at the clock again.
#include "core/wait.hpp"

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace snowflake {
namespace {

constexpr int64_t kT = 1700000000000;  // a millisecond well inside the id layout's window

// One watcher per boundary: later claims of the same or an older millisecond fail, a newer one
// succeeds, so that a cancelled watcher's claim lapses by itself.
TEST(BoundaryWatchTest, OneWatcherPerMillisecond) {
    BoundaryWatch watch;
    EXPECT_TRUE(claim_boundary_watch(watch, kT));
    EXPECT_FALSE(claim_boundary_watch(watch, kT));
    EXPECT_FALSE(claim_boundary_watch(watch, kT - 1));
    EXPECT_TRUE(claim_boundary_watch(watch, kT + 1));
    EXPECT_EQ(watch.exhausted_unix_ms.load(), kT + 1);
}

// Waiters that find the same millisecond used up at the same moment elect exactly one watcher.
TEST(BoundaryWatchTest, RacingWaitersElectExactlyOne) {
    constexpr int kThreads = 8;
    constexpr int kMilliseconds = 2000;
    BoundaryWatch watch;
    std::vector<std::atomic<int>> watchers(kMilliseconds);
    std::atomic<int> ready{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&] {
            ready.fetch_add(1);
            while (ready.load() < kThreads) {
            }
            for (int ms = 0; ms < kMilliseconds; ++ms) {
                if (claim_boundary_watch(watch, kT + ms)) {
                    watchers[ms].fetch_add(1);
                }
            }
        });
    }
    for (std::thread &thread : threads) {
        thread.join();
    }
    // A thread that falls behind finds newer claims and skips older milliseconds, so some may
    // have no watcher; none may have two.
    int watched = 0;
    for (const std::atomic<int> &count : watchers) {
        EXPECT_LE(count.load(), 1);
        watched += count.load();
    }
    EXPECT_GE(watched, 1);
    EXPECT_EQ(watch.exhausted_unix_ms.load(), kT + kMilliseconds - 1);
}

// Everyone but the watcher sleeps to the boundary; the watcher wakes its window early and polls
// once inside it.
TEST(SleepBeforeNextMsTest, WatcherWakesEarlyOthersAtTheBoundary) {
    const int64_t start_us = kT * 1000;
    EXPECT_EQ(sleep_before_next_ms_us(start_us, false), 1000);
    EXPECT_EQ(sleep_before_next_ms_us(start_us, true), 1000 - kWatchWindowUs);
    EXPECT_EQ(sleep_before_next_ms_us(start_us + 400, false), 600);
    EXPECT_EQ(sleep_before_next_ms_us(start_us + 400, true), 600 - kWatchWindowUs);
    EXPECT_EQ(sleep_before_next_ms_us(start_us + 1000 - kWatchWindowUs, true), 0);
    EXPECT_EQ(sleep_before_next_ms_us(start_us + 1000 - kWatchWindowUs, false), kWatchWindowUs);
    EXPECT_EQ(sleep_before_next_ms_us(start_us + 999, true), 0);
    EXPECT_EQ(sleep_before_next_ms_us(start_us + 999, false), 1);
}

// A waiter that is not the watcher never polls: it always sleeps at least a microsecond, and
// never past the boundary.
TEST(SleepBeforeNextMsTest, OthersNeverPollAndNeverOversleep) {
    for (int64_t into_ms_us = 0; into_ms_us < 1000; ++into_ms_us) {
        const int64_t sleep_us = sleep_before_next_ms_us(kT * 1000 + into_ms_us, false);
        EXPECT_GE(sleep_us, 1);
        EXPECT_EQ(into_ms_us + sleep_us, 1000);
        EXPECT_LE(sleep_before_next_ms_us(kT * 1000 + into_ms_us, true), sleep_us);
    }
}

}  // namespace
}  // namespace snowflake
