// Waiting for the next millisecond once this node's ids of the current one are used up. Many
// sessions may wait for the same boundary: one of them (the watcher) wakes just before it and
// polls the clock across it, so that the first id of the next millisecond is not late; the others
// sleep until the boundary itself, so that waiting costs them one sleep and one wake-up per
// millisecond however many they are. The caller owns the sleeping (it must stay cancellable).
#pragma once

#include <atomic>
#include <cstdint>
#include <type_traits>

namespace snowflake {

// How long before the boundary the watcher stops sleeping and polls the clock: a little more
// than a wake-up arrives late once the sleeping process asks for a timer slack of 1 µs.
inline constexpr int64_t kWatchWindowUs = 60;

// The millisecond whose end a watcher has claimed; shared by every process that generates ids.
struct BoundaryWatch {
    std::atomic<int64_t> exhausted_unix_ms{0};
};

static_assert(std::atomic<int64_t>::is_always_lock_free,
              "the watch is shared between processes and must not hide a lock");
static_assert(std::is_standard_layout_v<BoundaryWatch>, "the watch is placed in shared memory");

// Makes the caller the watcher of the end of exhausted_unix_ms if nobody is yet. A watcher that
// is cancelled leaves a claim that lapses by itself one millisecond later.
inline bool claim_boundary_watch(BoundaryWatch &watch, int64_t exhausted_unix_ms) noexcept {
    int64_t claimed = watch.exhausted_unix_ms.load(std::memory_order_relaxed);
    while (claimed < exhausted_unix_ms) {
        if (watch.exhausted_unix_ms.compare_exchange_weak(claimed, exhausted_unix_ms,
                                                          std::memory_order_relaxed)) {
            return true;
        }
    }
    return false;
}

// Microseconds to sleep at clock reading now_unix_us before reading the clock again; 0 means
// poll. The watcher sleeps up to its window before the boundary, anyone else to the boundary.
constexpr int64_t sleep_before_next_ms_us(int64_t now_unix_us, bool watcher) noexcept {
    const int64_t into_ms_us = now_unix_us % 1000;
    const int64_t until_boundary_us = 1000 - (into_ms_us < 0 ? into_ms_us + 1000 : into_ms_us);
    const int64_t wake_before_us = watcher ? kWatchWindowUs : 0;
    return until_boundary_us > wake_before_us ? until_boundary_us - wake_before_us : 0;
}

}  // namespace snowflake
