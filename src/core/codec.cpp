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

namespace {

// The spaces bigint's input skips (C's isspace in the "C" locale), without a locale lookup.
constexpr bool is_space(char c) noexcept {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

}  // namespace

IdTextResult parse_id_text(const char *text) noexcept {
    const char *cursor = text;
    while (is_space(*cursor)) {
        ++cursor;
    }
    const bool minus = *cursor == '-';
    if (*cursor == '-' || *cursor == '+') {
        ++cursor;
    }
    if (*cursor < '0' || *cursor > '9') {
        return {IdTextStatus::kMalformed, 0};
    }
    bool too_large = false;
    uint64_t value = 0;
    for (; *cursor >= '0' && *cursor <= '9'; ++cursor) {
        const uint64_t digit = static_cast<uint64_t>(*cursor - '0');
        too_large = too_large || value > (static_cast<uint64_t>(kMaxId) - digit) / 10;
        value = too_large ? 0 : value * 10 + digit;
    }
    while (is_space(*cursor)) {
        ++cursor;
    }
    if (*cursor != '\0') {
        return {IdTextStatus::kMalformed, 0};
    }
    if (minus && (too_large || value != 0)) {
        return {IdTextStatus::kNegative, 0};
    }
    if (too_large) {
        return {IdTextStatus::kTooLarge, 0};
    }
    return {IdTextStatus::kOk, static_cast<int64_t>(value)};
}

}  // namespace snowflake
