// The file format of the durable mark: three short lines an operator can read, the last a
// CRC-32C of the first two, so that a torn or damaged file is detected instead of trusted.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace snowflake {

inline constexpr size_t kMarkFileMaxSize = 96;

struct MarkFileText {
    char bytes[kMarkFileMaxSize];
    size_t size;
};

enum class MarkFileStatus : uint8_t {
    kOk,
    kMalformed,         // not the layout this version writes
    kChecksumMismatch,  // the layout is right but the checksum does not match: damaged
    kOutOfRange,        // checksum right, but the mark is no timestamp an id can carry
};

struct MarkFileResult {
    MarkFileStatus status;
    int64_t mark_unix_ms;
};

// The CRC-32C (Castagnoli) that guards the file's contents.
uint32_t crc32c(const char *bytes, size_t size) noexcept;

// The exact bytes written for a mark.
MarkFileText format_mark_file(int64_t mark_unix_ms) noexcept;

// Accepts only what format_mark_file writes, byte for byte, for a mark within the layout's range.
MarkFileResult parse_mark_file(const char *bytes, size_t size) noexcept;

static_assert(std::is_trivially_destructible_v<MarkFileText> &&
                  std::is_trivially_destructible_v<MarkFileResult>,
              "results cross the ereport boundary and must own nothing");

}  // namespace snowflake
