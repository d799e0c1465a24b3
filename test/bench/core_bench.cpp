// Microbenchmarks of the pure C++ core (src/core), with no PostgreSQL in the way.
//
// What it measures, and why:
// - next_id with a fake clock that never makes the generator wait, alone and with 2 and 4 threads
//   sharing one state word: the cost of the lock-free state machine itself (one decide() and one
//   compare-and-swap per id) and how it degrades when backends contend for the word. The
//   contended runs also report how evenly the ids were spread over the threads.
// - next_id with the real clock: the physical ceiling of 4,096 ids per millisecond (about 244 ns
//   per id), which is what a single node can ever reach, for comparison with the above.
// - encode, decode and min_id_at_or_after over varied valid inputs: the per-row cost of the SQL
//   functions built on them.
// - clock_gettime(CLOCK_REALTIME): the cost of the clock read that every next_id call makes.
//
// Built by `make test/bench/core_bench`; test/bench/run runs it after the SQL benchmarks.

#include <time.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include <benchmark/benchmark.h>

#include "core/codec.hpp"
#include "core/generator.hpp"
#include "core/layout.hpp"

namespace {

using snowflake::GeneratorState;
using snowflake::NextResult;
using snowflake::NextStatus;
using snowflake::Node;

// 2023-11-14T22:13:20Z: any time well inside the 41-bit range will do for the fake clocks.
constexpr int64_t kFakeStartUnixMs = 1700000000000;
constexpr std::size_t kInputs = 4096;  // a power of two, so the index wraps with a mask
constexpr int kMaxThreads = 64;        // well above the 4 threads BM_NextIdContended registers

// A small deterministic generator (splitmix64), so every run sees the same inputs.
uint64_t NextRandom(uint64_t &seed) {
    uint64_t z = (seed += 0x9e3779b97f4a7c15);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9;
    z = (z ^ (z >> 27)) * 0x94d049bb133111eb;
    return z ^ (z >> 31);
}

Node BenchNode() {
    return snowflake::make_node(1, 1).node;
}

int64_t RealClockUnixMs() noexcept {
    timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

// Issues one id from a private fake clock, moving it on by 1 ms whenever the millisecond is used
// up. False on any other refusal, which would be a bug in the benchmark or the core.
inline bool IssueWithFakeClock(GeneratorState &gen, snowflake::SeenWord &seen, Node node,
                               int64_t &now_unix_ms, int64_t &id) {
    for (;;) {
        const NextResult result = snowflake::next_id(gen, node, snowflake::kMaxUnixMs, seen,
                                                     [&now_unix_ms] { return now_unix_ms; });
        if (result.status == NextStatus::kIssued) {
            id = result.id;
            return true;
        }
        if (result.status != NextStatus::kSequenceExhausted) {
            return false;
        }
        ++now_unix_ms;
    }
}

// The state and fake clock shared by the threads of BM_NextIdContended, each on its own cache
// line so that the clock does not add false sharing to the state word. Thread 0 resets them
// before the timed loop; Google Benchmark holds every thread at a barrier until then.
alignas(64) GeneratorState g_shared_state;
alignas(64) std::atomic<int64_t> g_shared_clock{kFakeStartUnixMs};
// Whether every thread is still issuing, and the ids each thread issued while that held.
alignas(64) std::atomic<bool> g_all_running{false};
alignas(64) std::atomic<int> g_threads_done{0};
std::array<int64_t, kMaxThreads> g_ids_while_all_running{};

// As IssueWithFakeClock, on the shared state and clock: whoever sees the current millisecond used
// up moves the clock on by exactly 1 ms, unless another thread already has.
inline bool IssueWithSharedFakeClock(Node node, int64_t &id) {
    thread_local snowflake::SeenWord seen;
    for (;;) {
        const NextResult result =
            snowflake::next_id(g_shared_state, node, snowflake::kMaxUnixMs, seen,
                               [] { return g_shared_clock.load(std::memory_order_acquire); });
        if (result.status == NextStatus::kIssued) {
            id = result.id;
            return true;
        }
        if (result.status != NextStatus::kSequenceExhausted) {
            return false;
        }
        int64_t seen = result.now_unix_ms;
        g_shared_clock.compare_exchange_strong(seen, seen + 1, std::memory_order_acq_rel,
                                               std::memory_order_acquire);
    }
}

// Why: the cost of the generator alone, one id per iteration, when the clock never holds it back.
void BM_NextIdOneThread(benchmark::State &state) {
    GeneratorState gen;
    snowflake::SeenWord seen;
    const Node node = BenchNode();
    int64_t now_unix_ms = kFakeStartUnixMs;
    int64_t id = 0;
    for (auto _ : state) {
        if (!IssueWithFakeClock(gen, seen, node, now_unix_ms, id)) {
            state.SkipWithError("next_id refused with something other than kSequenceExhausted");
            break;
        }
        benchmark::DoNotOptimize(id);
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_NextIdOneThread);

// Why: how the compare-and-swap on one shared word scales (or not) when threads contend for it,
// and whether some thread starves; ids_min/ids_max are the fewest and most ids one thread issued
// while every thread was still running (each thread runs the same number of iterations, so the
// total per thread is equal by construction and says nothing about fairness).
void BM_NextIdContended(benchmark::State &state) {
    if (state.thread_index() == 0) {
        g_shared_state.after_last_id.store(0, std::memory_order_relaxed);
        g_shared_clock.store(kFakeStartUnixMs, std::memory_order_relaxed);
        g_all_running.store(true, std::memory_order_relaxed);
        g_threads_done.store(0, std::memory_order_relaxed);
    }
    const Node node = BenchNode();
    int64_t id = 0;
    int64_t issued = 0;
    int64_t issued_while_all_running = 0;
    for (auto _ : state) {
        if (!IssueWithSharedFakeClock(node, id)) {
            state.SkipWithError("next_id refused with something other than kSequenceExhausted");
            break;
        }
        benchmark::DoNotOptimize(id);
        if (g_all_running.load(std::memory_order_relaxed)) {
            ++issued_while_all_running;
        }
        if (++issued == static_cast<int64_t>(state.max_iterations)) {
            g_all_running.store(false, std::memory_order_relaxed);
        }
    }
    state.SetItemsProcessed(state.iterations());

    // The last thread to finish reports the spread; counters are summed over threads, so the
    // others leave these unset.
    g_ids_while_all_running[static_cast<std::size_t>(state.thread_index())] =
        issued_while_all_running;
    if (g_threads_done.fetch_add(1, std::memory_order_acq_rel) + 1 == state.threads()) {
        const auto first = g_ids_while_all_running.begin();
        const auto last = first + state.threads();
        state.counters["ids_min"] = static_cast<double>(*std::min_element(first, last));
        state.counters["ids_max"] = static_cast<double>(*std::max_element(first, last));
    }
}
BENCHMARK(BM_NextIdContended)->Threads(2)->Threads(4)->UseRealTime();

// Why: the real ceiling of one node, 4,096 ids per millisecond (about 244 ns per id); exhausted/id
// is how many times a call found the millisecond used up and spun on the clock.
void BM_NextIdRealClock(benchmark::State &state) {
    GeneratorState gen;
    snowflake::SeenWord seen;
    const Node node = BenchNode();
    int64_t exhausted = 0;
    for (auto _ : state) {
        NextResult result;
        for (;;) {
            result = snowflake::next_id(gen, node, snowflake::kMaxUnixMs, seen, RealClockUnixMs);
            if (result.status != NextStatus::kSequenceExhausted) {
                break;
            }
            ++exhausted;
        }
        if (result.status != NextStatus::kIssued) {
            state.SkipWithError("next_id refused with the real clock (did it step backwards?)");
            break;
        }
        benchmark::DoNotOptimize(result.id);
    }
    state.SetItemsProcessed(state.iterations());
    state.counters["exhausted/id"] =
        benchmark::Counter(static_cast<double>(exhausted), benchmark::Counter::kAvgIterations);
}
BENCHMARK(BM_NextIdRealClock);

// Why: the per-row cost of snowflake_encode, with every field varied so nothing is constant.
void BM_Encode(benchmark::State &state) {
    std::array<snowflake::Parts, kInputs> inputs;
    uint64_t seed = 1;
    for (snowflake::Parts &parts : inputs) {
        parts.unix_ms =
            snowflake::kEpochUnixMs +
            static_cast<int64_t>(NextRandom(seed) %
                                 static_cast<uint64_t>(snowflake::kMaxTimestampOffset + 1));
        parts.datacenter_id =
            static_cast<int32_t>(NextRandom(seed) % (snowflake::kMaxDatacenterId + 1));
        parts.machine_id = static_cast<int32_t>(NextRandom(seed) % (snowflake::kMaxMachineId + 1));
        parts.sequence = static_cast<int32_t>(NextRandom(seed) % (snowflake::kMaxSequence + 1));
    }
    std::size_t i = 0;
    for (auto _ : state) {
        benchmark::DoNotOptimize(snowflake::encode(inputs[i++ & (kInputs - 1)]));
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Encode);

// Why: the per-row cost of snowflake_decode and the field extractors, over varied valid ids.
void BM_Decode(benchmark::State &state) {
    std::array<int64_t, kInputs> inputs;
    uint64_t seed = 2;
    for (int64_t &id : inputs) {
        id = static_cast<int64_t>(NextRandom(seed) >> 1);  // every non-negative id is valid
    }
    std::size_t i = 0;
    for (auto _ : state) {
        benchmark::DoNotOptimize(snowflake::decode(inputs[i++ & (kInputs - 1)]));
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Decode);

// Why: the cost of turning a timestamp bound into an id bound, as snowflake_min_id does.
void BM_MinIdAtOrAfter(benchmark::State &state) {
    std::array<int64_t, kInputs> inputs;
    uint64_t seed = 3;
    for (int64_t &unix_ms : inputs) {
        unix_ms = snowflake::kEpochUnixMs +
                  static_cast<int64_t>(NextRandom(seed) %
                                       static_cast<uint64_t>(snowflake::kMaxTimestampOffset + 1));
    }
    std::size_t i = 0;
    for (auto _ : state) {
        benchmark::DoNotOptimize(snowflake::min_id_at_or_after(inputs[i++ & (kInputs - 1)]));
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_MinIdAtOrAfter);

// Why: every next_id call reads the clock once, so this is a floor under BM_NextIdRealClock.
void BM_ClockRead(benchmark::State &state) {
    timespec ts;
    for (auto _ : state) {
        clock_gettime(CLOCK_REALTIME, &ts);
        benchmark::DoNotOptimize(ts);
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ClockRead);

}  // namespace
