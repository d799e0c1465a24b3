#include "core/generator.hpp"

#include "core/layout.hpp"

namespace snowflake {

namespace {

constexpr uint64_t kSlotsPerMs = uint64_t{1} << kSequenceBits;

}  // namespace

NodeResult make_node(int32_t datacenter_id, int32_t machine_id) noexcept {
    const EncodeResult encoded = encode({kEpochUnixMs, datacenter_id, machine_id, 0});
    return {encoded.status, {encoded.id}};
}

Decision decide(uint64_t next_slot, int64_t now_unix_ms, int64_t issue_limit_unix_ms) noexcept {
    if (now_unix_ms < kEpochUnixMs || now_unix_ms > kMaxUnixMs) {
        return {NextStatus::kClockOutOfRange, 0, 0};
    }
    const uint64_t first_slot_now = static_cast<uint64_t>(now_unix_ms - kEpochUnixMs)
                                    << kSequenceBits;
    const uint64_t past_last_slot_now = first_slot_now + kSlotsPerMs;
    if (next_slot > past_last_slot_now) {
        const auto last_offset = static_cast<int64_t>((next_slot - 1) >> kSequenceBits);
        return {NextStatus::kClockBehind, 0, last_offset + kEpochUnixMs};
    }
    if (next_slot == past_last_slot_now) {
        return {NextStatus::kSequenceExhausted, 0, 0};
    }
    if (now_unix_ms > issue_limit_unix_ms) {
        return {NextStatus::kPastIssueLimit, 0, 0};
    }
    return {NextStatus::kIssued, next_slot > first_slot_now ? next_slot : first_slot_now, 0};
}

int64_t id_from_slot(uint64_t slot, Node node) noexcept {
    const auto offset = static_cast<int64_t>(slot >> kSequenceBits);
    const auto sequence = static_cast<int64_t>(slot & (kSlotsPerMs - 1));
    return offset << kTimestampShift | node.bits | sequence;
}

LastIssued last_issued(const GeneratorState &state) noexcept {
    const uint64_t next = state.next_slot.load(std::memory_order_relaxed);
    if (next == 0) {
        return {false, 0};
    }
    return {true, static_cast<int64_t>((next - 1) >> kSequenceBits) + kEpochUnixMs};
}

void raise_floor(GeneratorState &state, int64_t through_unix_ms) noexcept {
    if (through_unix_ms < kEpochUnixMs) {
        return;
    }
    const uint64_t floor = static_cast<uint64_t>(through_unix_ms - kEpochUnixMs + 1)
                           << kSequenceBits;
    uint64_t next = state.next_slot.load(std::memory_order_acquire);
    while (next < floor && !state.next_slot.compare_exchange_weak(
                               next, floor, std::memory_order_acq_rel, std::memory_order_acquire)) {
    }
}

}  // namespace snowflake
