// The file format of the durable mark: short lines an operator can read, the last a CRC-32C of
// the others, so that a torn or damaged file is detected instead of trusted. Version 2 (1.10)
// names the cluster that wrote it by its system identifier, and the node pair of the ids it
// covers, so that a mark copied from another cluster, or one of another pair, is told from one
// that speaks for this data directory's ids; version 1 files are still read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace snowflake {

inline constexpr size_t kMarkFileMaxSize = 160;

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
    // The system identifier of the cluster that wrote it, or 0 in a version 1 file, which
    // names none.
    uint64_t system_identifier;
    // The node fields (core/generator.hpp, Node::bits) of the ids it covers, or -1 in a version 1
    // file and in a version 2 file that names no pair.
    int64_t node_bits;
};

// The CRC-32C (Castagnoli) that guards the file's contents.
uint32_t crc32c(const char *bytes, size_t size) noexcept;

// The exact bytes written for a mark by the cluster of a system identifier (never 0), for the
// ids of a node pair, or of none (node_bits -1: "none" in both lines, since 1.11).
MarkFileText format_mark_file(int64_t mark_unix_ms, uint64_t system_identifier,
                              int64_t node_bits) noexcept;

// Accepts only what format_mark_file writes, byte for byte, for a mark within the layout's range,
// and the version 1 files that releases before 1.10 wrote.
MarkFileResult parse_mark_file(const char *bytes, size_t size) noexcept;

static_assert(std::is_trivially_destructible_v<MarkFileText> &&
                  std::is_trivially_destructible_v<MarkFileResult>,
              "results cross the ereport boundary and must own nothing");

}  // namespace snowflake
