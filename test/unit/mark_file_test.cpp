// Unit tests of the durable mark's file format: the exact bytes, the round trip, and that every
// kind of damage is caught rather than trusted.
#include "core/mark_file.hpp"

#include "core/layout.hpp"

#include <cstdint>
#include <string>

#include <gtest/gtest.h>

namespace snowflake {
namespace {

std::string text_of(int64_t mark) {
    const MarkFileText text = format_mark_file(mark);
    return std::string(text.bytes, text.size);
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
    const std::string body = "snowflake mark v1\nmark_unix_ms=1764464000000\n";
    ASSERT_EQ(text.substr(0, body.size()), body);
    char trailer[32];
    std::snprintf(trailer, sizeof(trailer), "crc32c=%08x\n", crc32c(body.data(), body.size()));
    EXPECT_EQ(text.substr(body.size()), trailer);
}

// Whatever is written must read back as the same mark, including the extremes of the layout.
TEST(MarkFileTest, RoundTrip) {
    for (const int64_t mark : {kEpochUnixMs, int64_t{1764464000000}, kMaxUnixMs}) {
        const MarkFileResult result = parse(text_of(mark));
        EXPECT_EQ(result.status, MarkFileStatus::kOk) << mark;
        EXPECT_EQ(result.mark_unix_ms, mark);
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
    const size_t digits_begin = good.find('=') + 1;
    const size_t digits_end = good.find('\n', digits_begin);
    for (size_t i = digits_begin; i < digits_end; i++) {
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
    EXPECT_EQ(parse("snowflake mark v2\nmark_unix_ms=1\ncrc32c=00000000\n").status,
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
