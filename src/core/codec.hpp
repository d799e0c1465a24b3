// Encoding and decoding of Snowflake ids with full validation, and the id bounds of a time range.
// Nothing here throws or allocates: every failure is a status the caller turns into an error.
#pragma once

#include <cstdint>
#include <type_traits>

namespace snowflake {

enum class CodecStatus : uint8_t {
    kOk,
    kNegativeId,
    kTimestampOutOfRange,
    kDatacenterIdOutOfRange,
    kMachineIdOutOfRange,
    kSequenceOutOfRange,
};

// The fields of an id; the timestamp is in Unix milliseconds, as SQL users see it.
struct Parts {
    int64_t unix_ms;
    int32_t datacenter_id;
    int32_t machine_id;
    int32_t sequence;
};

struct EncodeResult {
    CodecStatus status;
    int64_t id;
};

struct DecodeResult {
    CodecStatus status;
    Parts parts;
};

// The field an encode status rejects, its value and its inclusive range, so that every caller
// words the error alike.
struct FieldError {
    const char *name;
    int64_t value;
    int64_t min;
    int64_t max;
};

// Builds an id; the first field outside its range is reported, nothing is masked or wrapped.
EncodeResult encode(const Parts &parts) noexcept;

// Splits an id into its fields; a negative id is not a Snowflake id.
DecodeResult decode(int64_t id) noexcept;

// Names the field behind an out-of-range status of encode(parts), for error messages.
FieldError field_error(CodecStatus status, const Parts &parts) noexcept;

// Smallest id whose timestamp is at or after unix_ms, clamped to [0, kMaxId].
int64_t min_id_at_or_after(int64_t unix_ms) noexcept;

// Largest id whose timestamp is at or before unix_ms, clamped to [-1, kMaxId].
int64_t max_id_at_or_before(int64_t unix_ms) noexcept;

// Division rounding toward negative and positive infinity, for microsecond-to-millisecond steps.
// C++ division truncates toward zero; the exact quotient is negative when the signs differ.
constexpr int64_t floor_div(int64_t value, int64_t divisor) noexcept {
    const int64_t quotient = value / divisor;
    return (value % divisor != 0 && (value < 0) != (divisor < 0)) ? quotient - 1 : quotient;
}

constexpr int64_t ceil_div(int64_t value, int64_t divisor) noexcept {
    const int64_t quotient = value / divisor;
    return (value % divisor != 0 && (value < 0) == (divisor < 0)) ? quotient + 1 : quotient;
}

// PostgreSQL's timestamptz counts microseconds from 2000-01-01; these bridge it to Unix ms
// without overflow for every int64 input, infinities included.
inline constexpr int64_t kPgEpochUnixMs = 946684800000;

constexpr int64_t unix_ms_floor_from_pg_us(int64_t pg_us) noexcept {
    return floor_div(pg_us, 1000) + kPgEpochUnixMs;
}

constexpr int64_t unix_ms_ceil_from_pg_us(int64_t pg_us) noexcept {
    return ceil_div(pg_us, 1000) + kPgEpochUnixMs;
}

// Only defined for the Snowflake timestamp range, where it cannot overflow.
constexpr int64_t pg_us_from_unix_ms(int64_t unix_ms) noexcept {
    return (unix_ms - kPgEpochUnixMs) * 1000;
}

// What reading the text form of a value of the snowflake type found.
enum class IdTextStatus : uint8_t {
    kOk,
    kMalformed,
    kNegative,
    kTooLarge,
};

struct IdTextResult {
    IdTextStatus status;
    int64_t id;
};

// Reads decimal digits as bigint's input does (spaces around them, one optional sign), so that
// every text bigint takes for an id the type takes too; a sign of minus is only allowed on zero,
// since no id is negative.
IdTextResult parse_id_text(const char *text) noexcept;

static_assert(std::is_trivially_destructible_v<EncodeResult> &&
                  std::is_trivially_destructible_v<DecodeResult> &&
                  std::is_trivially_destructible_v<IdTextResult>,
              "results cross the ereport boundary and must own nothing");

}  // namespace snowflake
