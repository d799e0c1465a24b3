#include "core/mark_file.hpp"

#include <cstdio>
#include <cstring>

#include "core/layout.hpp"

namespace snowflake {

namespace {

constexpr char kHeader[] = "snowflake mark v1\nmark_unix_ms=";
constexpr char kChecksumKey[] = "crc32c=";
constexpr size_t kChecksumDigits = 8;
constexpr uint32_t kCastagnoliReversed = 0x82F63B78;

// Reads a run of decimal digits that fits an int64_t; returns the index after it, or 0.
size_t parse_decimal(const char *bytes, size_t begin, size_t end, int64_t *value) noexcept {
    int64_t result = 0;
    size_t i = begin;
    for (; i < end && bytes[i] >= '0' && bytes[i] <= '9'; i++) {
        const int digit = bytes[i] - '0';
        if (result > (INT64_MAX - digit) / 10) {
            return 0;
        }
        result = result * 10 + digit;
    }
    // One digit at least, and no leading zero, so that each mark has one spelling.
    if (i == begin || (bytes[begin] == '0' && i - begin > 1)) {
        return 0;
    }
    *value = result;
    return i;
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

MarkFileText format_mark_file(int64_t mark_unix_ms) noexcept {
    MarkFileText text{};
    const int body = std::snprintf(text.bytes, sizeof(text.bytes), "%s%lld\n", kHeader,
                                   static_cast<long long>(mark_unix_ms));
    const int trailer = std::snprintf(text.bytes + body, sizeof(text.bytes) - body, "%s%08x\n",
                                      kChecksumKey, crc32c(text.bytes, body));
    text.size = static_cast<size_t>(body + trailer);
    return text;
}

MarkFileResult parse_mark_file(const char *bytes, size_t size) noexcept {
    const MarkFileResult malformed{MarkFileStatus::kMalformed, 0};
    const size_t header_size = sizeof(kHeader) - 1;
    if (size < header_size || std::memcmp(bytes, kHeader, header_size) != 0) {
        return malformed;
    }
    int64_t mark = 0;
    const size_t digits_end = parse_decimal(bytes, header_size, size, &mark);
    if (digits_end == 0 || digits_end >= size || bytes[digits_end] != '\n') {
        return malformed;
    }
    const size_t body_size = digits_end + 1;
    const size_t key_size = sizeof(kChecksumKey) - 1;
    if (size != body_size + key_size + kChecksumDigits + 1 ||
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
        return {MarkFileStatus::kChecksumMismatch, 0};
    }
    // Every mark written is a timestamp of the layout; anything else would wrap the generator.
    if (mark < kEpochUnixMs || mark > kMaxUnixMs) {
        return {MarkFileStatus::kOutOfRange, 0};
    }
    return {MarkFileStatus::kOk, mark};
}

}  // namespace snowflake
