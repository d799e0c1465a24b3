// Unit tests of the durable mark's file format: the exact bytes, the round trip, the version 1
// files of releases before 1.10, and that every kind of damage is caught rather than trusted.
#include "core/mark_file.hpp"

#include "core/layout.hpp"

#include <cstdint>
#include <string>

#include <gtest/gtest.h>

namespace snowflake {
namespace {

// A system identifier as initdb draws them: the time of initdb in its high bits.
constexpr uint64_t kSystemIdentifier = 7446212953184735771u;

// The node fields of datacenter 7, machine 13.
constexpr int64_t kNodeBits = int64_t{7} << kDatacenterShift | int64_t{13} << kMachineShift;

std::string text_of(int64_t mark, uint64_t system_identifier = kSystemIdentifier,
                    int64_t node_bits = kNodeBits) {
    const MarkFileText text = format_mark_file(mark, system_identifier, node_bits);
    return std::string(text.bytes, text.size);
}

// A version 2 body with its checksum, as a writer with other ideas could leave it.
std::string version_2_text_of(const std::string &body) {
    char trailer[32];
    std::snprintf(trailer, sizeof(trailer), "crc32c=%08x\n", crc32c(body.data(), body.size()));
    return body + trailer;
}

// A file as releases before 1.10 wrote it, with its checksum.
std::string version_1_text_of(const std::string &mark_digits) {
    const std::string body = "snowflake mark v1\nmark_unix_ms=" + mark_digits + "\n";
    char trailer[32];
    std::snprintf(trailer, sizeof(trailer), "crc32c=%08x\n", crc32c(body.data(), body.size()));
    return body + trailer;
}

MarkFileResult parse(const std::string &text) {
    return parse_mark_file(text.data(), text.size());
}

// The CRC must be the standard CRC-32C, so an operator can check a file with common tools.
TEST(MarkFileTest, Crc32cMatchesTheStandardCheckValue) {
    EXPECT_EQ(crc32c("123456789", 9), 0xE3069283u);
    EXPECT_EQ(crc32c("", 0), 0u);
}

// The file is read by people during incidents: its layout is fixed and readable.
TEST(MarkFileTest, ExactBytes) {
    const std::string text = text_of(1764464000000);
    const std::string body =
        "snowflake mark v2\nsystem_identifier=7446212953184735771\ndatacenter_id=7\n"
        "machine_id=13\nmark_unix_ms=1764464000000\n";
    ASSERT_EQ(text.substr(0, body.size()), body);
    char trailer[32];
    std::snprintf(trailer, sizeof(trailer), "crc32c=%08x\n", crc32c(body.data(), body.size()));
    EXPECT_EQ(text.substr(body.size()), trailer);
}

// Whatever is written must read back as the same mark, cluster and pair, including the extremes.
TEST(MarkFileTest, RoundTrip) {
    const int64_t all_ones = int64_t{kMaxDatacenterId} << kDatacenterShift |
                             int64_t{kMaxMachineId} << kMachineShift;
    for (const int64_t mark : {kEpochUnixMs, int64_t{1764464000000}, kMaxUnixMs}) {
        for (const uint64_t system : {uint64_t{1}, kSystemIdentifier, UINT64_MAX}) {
            for (const int64_t node : {int64_t{0}, kNodeBits, all_ones}) {
                const MarkFileResult result = parse(text_of(mark, system, node));
                EXPECT_EQ(result.status, MarkFileStatus::kOk) << mark;
                EXPECT_EQ(result.mark_unix_ms, mark);
                EXPECT_EQ(result.system_identifier, system);
                EXPECT_EQ(result.node_bits, node);
            }
        }
    }
    EXPECT_LE(text_of(kMaxUnixMs, UINT64_MAX, all_ones).size(), kMarkFileMaxSize);
}

// A file of a release before 1.10 is read, and names no cluster: the start then cannot tell
// whose history it is, and trusts it as those releases did.
TEST(MarkFileTest, Version1FilesAreRead) {
    const MarkFileResult result = parse(version_1_text_of("1764464000000"));
    EXPECT_EQ(result.status, MarkFileStatus::kOk);
    EXPECT_EQ(result.mark_unix_ms, 1764464000000);
    EXPECT_EQ(result.system_identifier, 0u);
    EXPECT_EQ(result.node_bits, -1);
    EXPECT_EQ(parse(version_1_text_of("1")).status, MarkFileStatus::kOutOfRange);
}

// Version 2 always names its cluster and a pair of the layout: a system identifier of 0, a
// missing line, or a node id out of range is damage.
TEST(MarkFileTest, Version2NamesItsClusterAndPair) {
    EXPECT_EQ(parse(version_2_text_of("snowflake mark v2\nsystem_identifier=1\ndatacenter_id=7\n"
                                      "machine_id=13\nmark_unix_ms=1764464000000\n"))
                  .status,
              MarkFileStatus::kOk);
    for (const std::string &body :
         {std::string("snowflake mark v2\nsystem_identifier=0\ndatacenter_id=7\nmachine_id=13\n"
                      "mark_unix_ms=1764464000000\n"),
          std::string("snowflake mark v2\nmark_unix_ms=1764464000000\n"),
          std::string("snowflake mark v2\nsystem_identifier=1\nmark_unix_ms=1764464000000\n"),
          std::string("snowflake mark v2\nsystem_identifier=18446744073709551616\n"
                      "datacenter_id=7\nmachine_id=13\nmark_unix_ms=1764464000000\n"),
          std::string("snowflake mark v2\nsystem_identifier=1\ndatacenter_id=32\nmachine_id=13\n"
                      "mark_unix_ms=1764464000000\n"),
          std::string("snowflake mark v2\nsystem_identifier=1\ndatacenter_id=7\nmachine_id=32\n"
                      "mark_unix_ms=1764464000000\n")}) {
        EXPECT_EQ(parse(version_2_text_of(body)).status, MarkFileStatus::kMalformed) << body;
    }
}

// A standby with no pair set that replays a record naming none writes "none" in both lines
// (1.11); one "none" beside a number is no pair at all.
TEST(MarkFileTest, Version2MayNameNoPair) {
    const std::string none = text_of(1764464000000, kSystemIdentifier, -1);
    EXPECT_NE(none.find("datacenter_id=none\nmachine_id=none\n"), std::string::npos) << none;
    const MarkFileResult parsed = parse(none);
    EXPECT_EQ(parsed.status, MarkFileStatus::kOk);
    EXPECT_EQ(parsed.node_bits, -1);
    EXPECT_EQ(parsed.system_identifier, kSystemIdentifier);
    EXPECT_EQ(parsed.mark_unix_ms, 1764464000000);
    for (const std::string &body :
         {std::string("snowflake mark v2\nsystem_identifier=1\ndatacenter_id=none\nmachine_id=13\n"
                      "mark_unix_ms=1764464000000\n"),
          std::string("snowflake mark v2\nsystem_identifier=1\ndatacenter_id=7\nmachine_id=none\n"
                      "mark_unix_ms=1764464000000\n"),
          std::string("snowflake mark v2\nsystem_identifier=1\ndatacenter_id=nonE\n"
                      "machine_id=none\nmark_unix_ms=1764464000000\n"),
          std::string("snowflake mark v2\nsystem_identifier=1\ndatacenter_id=none\n"
                      "machine_id=nonee\nmark_unix_ms=1764464000000\n")}) {
        EXPECT_EQ(parse(version_2_text_of(body)).status, MarkFileStatus::kMalformed) << body;
    }
}

// A well-formed file whose mark no id can carry would wrap the generator: it counts as damaged.
TEST(MarkFileTest, MarksOutsideTheLayoutAreRejected) {
    for (const int64_t mark :
         {int64_t{0}, int64_t{1}, kEpochUnixMs - 1, kMaxUnixMs + 1, INT64_MAX}) {
        EXPECT_EQ(parse(text_of(mark)).status, MarkFileStatus::kOutOfRange) << mark;
    }
}

// A flipped digit in the mark must be caught by the checksum, never read as another mark.
TEST(MarkFileTest, EveryChangedDigitIsCaught) {
    const std::string good = text_of(1764464000000);
    // Every digit of the system identifier and of the mark, from the line after the version's.
    const size_t checksum_begin = good.find("crc32c=");
    for (size_t i = good.find('\n'); i < checksum_begin; i++) {
        if (good[i] < '0' || good[i] > '9') {
            continue;
        }
        std::string damaged = good;
        damaged[i] = damaged[i] == '9' ? '0' : static_cast<char>(damaged[i] + 1);
        EXPECT_EQ(parse(damaged).status, MarkFileStatus::kChecksumMismatch) << damaged;
    }
    std::string checksum_damaged = good;
    checksum_damaged[checksum_damaged.size() - 2] =
        checksum_damaged[checksum_damaged.size() - 2] == '0' ? '1' : '0';
    EXPECT_EQ(parse(checksum_damaged).status, MarkFileStatus::kChecksumMismatch);
}

// Truncation (a torn write), extra bytes and foreign content are all rejected.
TEST(MarkFileTest, MalformedInputs) {
    const std::string good = text_of(1764464000000);
    for (size_t size = 0; size < good.size(); size++) {
        EXPECT_NE(parse(good.substr(0, size)).status, MarkFileStatus::kOk) << size;
    }
    EXPECT_EQ(parse(good + "\n").status, MarkFileStatus::kMalformed);
    EXPECT_EQ(parse("").status, MarkFileStatus::kMalformed);
    EXPECT_EQ(parse("snowflake mark v3\nmark_unix_ms=1\ncrc32c=00000000\n").status,
              MarkFileStatus::kMalformed);
    EXPECT_EQ(parse("snowflake mark v1\nmark_unix_ms=-1\ncrc32c=00000000\n").status,
              MarkFileStatus::kMalformed);
    EXPECT_EQ(parse("snowflake mark v1\nmark_unix_ms=01\ncrc32c=00000000\n").status,
              MarkFileStatus::kMalformed);
    EXPECT_EQ(
        parse("snowflake mark v1\nmark_unix_ms=99999999999999999999\ncrc32c=00000000\n").status,
        MarkFileStatus::kMalformed);
    std::string not_hex = good;
    not_hex[not_hex.size() - 2] = 'g';
    EXPECT_EQ(parse(not_hex).status, MarkFileStatus::kMalformed);
    std::string with_nul = good;
    with_nul[5] = '\0';
    EXPECT_EQ(parse(with_nul).status, MarkFileStatus::kMalformed);
}

}  // namespace
}  // namespace snowflake
