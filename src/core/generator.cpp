#include "core/generator.hpp"

#include "core/layout.hpp"

namespace snowflake {

namespace {

constexpr int64_t kNodeMask = kBelowTimestampMask & ~int64_t{kMaxSequence};

}  // namespace

NodeResult make_node(int32_t datacenter_id, int32_t machine_id) noexcept {
    const EncodeResult encoded = encode({kEpochUnixMs, datacenter_id, machine_id, 0});
    return {encoded.status, {encoded.id}};
}

Decision decide(uint64_t after_last_id, Node node, int64_t now_unix_ms,
                int64_t issue_limit_unix_ms) noexcept {
    if (now_unix_ms < kEpochUnixMs || now_unix_ms > kMaxUnixMs) {
        return {NextStatus::kClockOutOfRange, 0, 0};
    }
    const int64_t first_id_now = (now_unix_ms - kEpochUnixMs) << kTimestampShift | node.bits;
    int64_t id = first_id_now;
    if (after_last_id != 0) {
        const auto last_id = static_cast<int64_t>(after_last_id - 1);
        const int64_t last_unix_ms = (last_id >> kTimestampShift) + kEpochUnixMs;
        if (now_unix_ms < last_unix_ms) {
            return {NextStatus::kClockBehind, 0, last_unix_ms};
        }
        if (now_unix_ms == last_unix_ms && last_id >= first_id_now) {
            // Same millisecond: the next sequence number of this node, if it has one left. A
            // node that sorts below the last id's has nothing left in this millisecond.
            const bool same_node = (last_id & kNodeMask) == node.bits;
            if (!same_node || (last_id & kMaxSequence) == kMaxSequence) {
                return {NextStatus::kSequenceExhausted, 0, 0};
            }
            id = last_id + 1;
        }
    }
    if (now_unix_ms > issue_limit_unix_ms) {
        return {NextStatus::kPastIssueLimit, 0, 0};
    }
    return {NextStatus::kIssued, id, 0};
}

LastIssued last_issued(const GeneratorState &state) noexcept {
    const uint64_t after_last = state.after_last_id.load(std::memory_order_relaxed);
    if (after_last == 0) {
        return {false, 0};
    }
    return {true, static_cast<int64_t>((after_last - 1) >> kTimestampShift) + kEpochUnixMs};
}

uint64_t word_through(int64_t through_unix_ms) noexcept {
    if (through_unix_ms < kEpochUnixMs) {
        return 0;
    }
    // A mark past the field (a lease taken in its last second) uses up every id.
    const int64_t through = through_unix_ms < kMaxUnixMs ? through_unix_ms : kMaxUnixMs;
    return static_cast<uint64_t>(through - kEpochUnixMs + 1) << kTimestampShift;
}

void raise_floor(GeneratorState &state, int64_t through_unix_ms) noexcept {
    const uint64_t floor = word_through(through_unix_ms);
    uint64_t after_last = state.after_last_id.load(std::memory_order_acquire);
    while (after_last < floor &&
           !state.after_last_id.compare_exchange_weak(after_last, floor, std::memory_order_acq_rel,
                                                      std::memory_order_acquire)) {
    }
}

}  // namespace snowflake
