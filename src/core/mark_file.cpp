#include "core/mark_file.hpp"

#include <cstdio>
#include <cstring>

#include "core/layout.hpp"

namespace snowflake {

namespace {

constexpr char kVersion1Header[] = "snowflake mark v1\n";
constexpr char kVersion2Header[] = "snowflake mark v2\n";
constexpr char kSystemKey[] = "system_identifier=";
constexpr char kDatacenterKey[] = "datacenter_id=";
constexpr char kMachineKey[] = "machine_id=";
constexpr char kMarkKey[] = "mark_unix_ms=";
constexpr char kChecksumKey[] = "crc32c=";
constexpr size_t kChecksumDigits = 8;
constexpr uint32_t kCastagnoliReversed = 0x82F63B78;

// Reads a run of decimal digits up to a limit; returns the index after it, or 0.
size_t parse_decimal(const char *bytes, size_t begin, size_t end, uint64_t limit,
                     uint64_t *value) noexcept {
    uint64_t result = 0;
    size_t i = begin;
    for (; i < end && bytes[i] >= '0' && bytes[i] <= '9'; i++) {
        const auto digit = static_cast<uint64_t>(bytes[i] - '0');
        if (result > (limit - digit) / 10) {
            return 0;
        }
        result = result * 10 + digit;
    }
    // One digit at least, and no leading zero, so that each value has one spelling.
    if (i == begin || (bytes[begin] == '0' && i - begin > 1)) {
        return 0;
    }
    *value = result;
    return i;
}

// Reads "key=digits\n" at begin; returns the index after the line, or 0.
size_t parse_line(const char *bytes, size_t begin, size_t end, const char *key, uint64_t limit,
                  uint64_t *value) noexcept {
    const size_t key_size = std::strlen(key);
    if (end - begin < key_size || std::memcmp(bytes + begin, key, key_size) != 0) {
        return 0;
    }
    const size_t digits_end = parse_decimal(bytes, begin + key_size, end, limit, value);
    if (digits_end == 0 || digits_end >= end || bytes[digits_end] != '\n') {
        return 0;
    }
    return digits_end + 1;
}

// The value a version 2 file gives a node id it does not know (1.11): a standby with no pair set
// that replays a mark record of a primary before 1.10, whose records name no pair.
constexpr char kNoPair[] = "none";

// Reads "key=none\n" at begin; returns the index after the line, or 0.
size_t parse_no_pair_line(const char *bytes, size_t begin, size_t end, const char *key) noexcept {
    const size_t key_size = std::strlen(key);
    const size_t value_size = sizeof(kNoPair) - 1;
    if (end - begin < key_size + value_size + 1 || std::memcmp(bytes + begin, key, key_size) != 0 ||
        std::memcmp(bytes + begin + key_size, kNoPair, value_size) != 0 ||
        bytes[begin + key_size + value_size] != '\n') {
        return 0;
    }
    return begin + key_size + value_size + 1;
}

// Reads the two lines of a version 2 file's node pair at begin: both numbers, or both "none"
// (node_bits -1). Returns the index after them, or 0.
size_t parse_pair(const char *bytes, size_t begin, size_t end, int64_t *node_bits) noexcept {
    size_t line_end = parse_no_pair_line(bytes, begin, end, kDatacenterKey);
    if (line_end != 0) {
        *node_bits = -1;
        return parse_no_pair_line(bytes, line_end, end, kMachineKey);
    }
    uint64_t datacenter = 0;
    uint64_t machine = 0;
    line_end = parse_line(bytes, begin, end, kDatacenterKey, kMaxDatacenterId, &datacenter);
    line_end =
        line_end == 0 ? 0 : parse_line(bytes, line_end, end, kMachineKey, kMaxMachineId, &machine);
    *node_bits = static_cast<int64_t>(datacenter << kDatacenterShift | machine << kMachineShift);
    return line_end;
}

// Reads the lines before the checksum of either version; returns where they end, or 0.
size_t parse_body(const char *bytes, size_t size, int64_t *mark, uint64_t *system_identifier,
                  int64_t *node_bits) noexcept {
    const size_t header_size = sizeof(kVersion2Header) - 1;
    if (size < header_size) {
        return 0;
    }
    size_t line_end = header_size;
    *system_identifier = 0;
    *node_bits = -1;
    if (std::memcmp(bytes, kVersion2Header, header_size) == 0) {
        line_end = parse_line(bytes, line_end, size, kSystemKey, UINT64_MAX, system_identifier);
        line_end = line_end == 0 ? 0 : parse_pair(bytes, line_end, size, node_bits);
        // Version 2 always names its cluster, and its pair or "none".
        if (line_end == 0 || *system_identifier == 0) {
            return 0;
        }
    } else if (std::memcmp(bytes, kVersion1Header, header_size) != 0) {
        return 0;
    }
    uint64_t value = 0;
    line_end = parse_line(bytes, line_end, size, kMarkKey, INT64_MAX, &value);
    *mark = static_cast<int64_t>(value);
    return line_end;
}

}  // namespace

uint32_t crc32c(const char *bytes, size_t size) noexcept {
    uint32_t crc = 0xFFFFFFFF;
    for (size_t i = 0; i < size; i++) {
        crc ^= static_cast<unsigned char>(bytes[i]);
        for (int bit = 0; bit < 8; bit++) {
            crc = (crc >> 1) ^ (kCastagnoliReversed & (0u - (crc & 1u)));
        }
    }
    return ~crc;
}

MarkFileText format_mark_file(int64_t mark_unix_ms, uint64_t system_identifier,
                              int64_t node_bits) noexcept {
    MarkFileText text{};
    char datacenter[8];
    char machine[8];
    if (node_bits < 0) {
        std::snprintf(datacenter, sizeof(datacenter), "%s", kNoPair);
        std::snprintf(machine, sizeof(machine), "%s", kNoPair);
    } else {
        std::snprintf(datacenter, sizeof(datacenter), "%lld",
                      static_cast<long long>(node_bits >> kDatacenterShift & kMaxDatacenterId));
        std::snprintf(machine, sizeof(machine), "%lld",
                      static_cast<long long>(node_bits >> kMachineShift & kMaxMachineId));
    }
    const int body = std::snprintf(
        text.bytes, sizeof(text.bytes), "%s%s%llu\n%s%s\n%s%s\n%s%lld\n", kVersion2Header,
        kSystemKey, static_cast<unsigned long long>(system_identifier), kDatacenterKey, datacenter,
        kMachineKey, machine, kMarkKey, static_cast<long long>(mark_unix_ms));
    const int trailer = std::snprintf(text.bytes + body, sizeof(text.bytes) - body, "%s%08x\n",
                                      kChecksumKey, crc32c(text.bytes, body));
    text.size = static_cast<size_t>(body + trailer);
    return text;
}

MarkFileResult parse_mark_file(const char *bytes, size_t size) noexcept {
    const MarkFileResult malformed{MarkFileStatus::kMalformed, 0, 0, -1};
    int64_t mark = 0;
    uint64_t system_identifier = 0;
    int64_t node_bits = -1;
    const size_t body_size = parse_body(bytes, size, &mark, &system_identifier, &node_bits);
    const size_t key_size = sizeof(kChecksumKey) - 1;
    if (body_size == 0 || size != body_size + key_size + kChecksumDigits + 1 ||
        std::memcmp(bytes + body_size, kChecksumKey, key_size) != 0 || bytes[size - 1] != '\n') {
        return malformed;
    }
    uint32_t stored = 0;
    for (size_t i = body_size + key_size; i < size - 1; i++) {
        const char c = bytes[i];
        const bool digit = c >= '0' && c <= '9';
        if (!digit && !(c >= 'a' && c <= 'f')) {
            return malformed;
        }
        stored = stored << 4 | static_cast<uint32_t>(digit ? c - '0' : c - 'a' + 10);
    }
    if (stored != crc32c(bytes, body_size)) {
        return {MarkFileStatus::kChecksumMismatch, 0, 0, -1};
    }
    // Every mark written is a timestamp of the layout; anything else would wrap the generator.
    if (mark < kEpochUnixMs || mark > kMaxUnixMs) {
        return {MarkFileStatus::kOutOfRange, 0, 0, -1};
    }
    return {MarkFileStatus::kOk, mark, system_identifier, node_bits};
}

}  // namespace snowflake
