#include "core/codec.hpp"

#include "core/layout.hpp"

namespace snowflake {

EncodeResult encode(const Parts &parts) noexcept {
    if (parts.unix_ms < kEpochUnixMs || parts.unix_ms > kMaxUnixMs) {
        return {CodecStatus::kTimestampOutOfRange, 0};
    }
    if (parts.datacenter_id < 0 || parts.datacenter_id > kMaxDatacenterId) {
        return {CodecStatus::kDatacenterIdOutOfRange, 0};
    }
    if (parts.machine_id < 0 || parts.machine_id > kMaxMachineId) {
        return {CodecStatus::kMachineIdOutOfRange, 0};
    }
    if (parts.sequence < 0 || parts.sequence > kMaxSequence) {
        return {CodecStatus::kSequenceOutOfRange, 0};
    }
    const int64_t id = (parts.unix_ms - kEpochUnixMs) << kTimestampShift |
                       int64_t{parts.datacenter_id} << kDatacenterShift |
                       int64_t{parts.machine_id} << kMachineShift | int64_t{parts.sequence};
    return {CodecStatus::kOk, id};
}

DecodeResult decode(int64_t id) noexcept {
    if (id < 0) {
        return {CodecStatus::kNegativeId, {}};
    }
    Parts parts{};
    parts.unix_ms = (id >> kTimestampShift) + kEpochUnixMs;
    parts.datacenter_id = static_cast<int32_t>((id >> kDatacenterShift) & kMaxDatacenterId);
    parts.machine_id = static_cast<int32_t>((id >> kMachineShift) & kMaxMachineId);
    parts.sequence = static_cast<int32_t>(id & kMaxSequence);
    return {CodecStatus::kOk, parts};
}

FieldError field_error(CodecStatus status, const Parts &parts) noexcept {
    switch (status) {
        case CodecStatus::kTimestampOutOfRange:
            return {"unix_ms", parts.unix_ms, kEpochUnixMs, kMaxUnixMs};
        case CodecStatus::kDatacenterIdOutOfRange:
            return {"datacenter_id", parts.datacenter_id, 0, kMaxDatacenterId};
        case CodecStatus::kMachineIdOutOfRange:
            return {"machine_id", parts.machine_id, 0, kMaxMachineId};
        case CodecStatus::kSequenceOutOfRange:
            return {"sequence", parts.sequence, 0, kMaxSequence};
        case CodecStatus::kNegativeId:
        case CodecStatus::kOk:
            break;
    }
    return {"", 0, 0, 0};
}

int64_t min_id_at_or_after(int64_t unix_ms) noexcept {
    if (unix_ms <= kEpochUnixMs) {
        return 0;
    }
    if (unix_ms > kMaxUnixMs) {
        return kMaxId;
    }
    return (unix_ms - kEpochUnixMs) << kTimestampShift;
}

int64_t max_id_at_or_before(int64_t unix_ms) noexcept {
    if (unix_ms < kEpochUnixMs) {
        return -1;
    }
    if (unix_ms >= kMaxUnixMs) {
        return kMaxId;
    }
    return (unix_ms - kEpochUnixMs) << kTimestampShift | kBelowTimestampMask;
}

}  // namespace snowflake
