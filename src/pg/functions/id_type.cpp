// The snowflake type's functions: reading its text and binary forms and the casts from the integer
// types and numeric, each refusing what no id can be; and its output, binary output, casts to
// numeric, the smaller integers and the floating-point types, and the transitions of min() and
// max() (version 1.9), which are bigint's own code under the type's signatures. Its comparisons,
// hashing and sorting are bigint's own operators, reached through the binary cast (doc/design.md
// "The snowflake type").

extern "C" {
#include "postgres.h"

#include "fmgr.h"
#include "libpq/pqformat.h"
#include "utils/fmgrprotos.h"
#include "utils/numeric.h"

PG_FUNCTION_INFO_V1(snowflake_in);
PG_FUNCTION_INFO_V1(snowflake_recv);
PG_FUNCTION_INFO_V1(snowflake_from_bigint);
PG_FUNCTION_INFO_V1(snowflake_from_integer);
PG_FUNCTION_INFO_V1(snowflake_from_smallint);
PG_FUNCTION_INFO_V1(snowflake_from_numeric);
}

#include "core/codec.hpp"
#include "pg/compat.hpp"

namespace {

using snowflake::IdTextStatus;

// The wording of each refusal, as the arguments of ereport() and of the input's soft errors.
#define NEGATIVE_VALUE_ERROR(value_text)                                     \
    errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),                             \
        errmsg("value %s is out of range for type snowflake", (value_text)), \
        errdetail("A Snowflake id is never negative."),                      \
        errhint("Keep a negative value in a bigint column, or use NULL for \"no id\".")
#define TOO_LARGE_ERROR(value_text)                                          \
    errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),                             \
        errmsg("value %s is out of range for type snowflake", (value_text)), \
        errdetail("A Snowflake id is at most 9223372036854775807."),         \
        errhint("Check where the value came from: no generator makes a larger id.")
#define MALFORMED_ERROR(value_text)                                              \
    errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),                                \
        errmsg("invalid input syntax for type snowflake: \"%s\"", (value_text)), \
        errhint("A Snowflake id is written as decimal digits, such as \"1541815603606036480\".")

// No id has the sign bit set.
[[noreturn]] void report_negative_value(const char *value_text) {
    ereport(ERROR, NEGATIVE_VALUE_ERROR(value_text));
    pg_unreachable();
}

// The largest id is bigint's largest value.
[[noreturn]] void report_too_large(const char *value_text) {
    ereport(ERROR, TOO_LARGE_ERROR(value_text));
    pg_unreachable();
}

// A value that cannot become an id passes through here on every path in, so that every stored
// value reads back through the type's input (pg_dump, COPY).
Datum checked_id(int64 value) {
    if (value < 0) {
        report_negative_value(psprintf(INT64_FORMAT, value));
    }
    return Int64GetDatum(value);
}

}  // namespace

// The text form: decimal digits only, read without the bigint input's hexadecimal and
// underscore forms, so that an id reads the same on every PostgreSQL version; its errors are soft
// where the caller asks (pg_input_is_valid(), COPY ... ON_ERROR ignore).
Datum snowflake_in(PG_FUNCTION_ARGS) {
    const char *text = PG_GETARG_CSTRING(0);
    const snowflake::IdTextResult result = snowflake::parse_id_text(text);
    switch (result.status) {
        case IdTextStatus::kOk:
            break;
        case IdTextStatus::kNegative:
            snowflake_input_error(fcinfo, NEGATIVE_VALUE_ERROR(text));
        case IdTextStatus::kTooLarge:
            snowflake_input_error(fcinfo, TOO_LARGE_ERROR(text));
        case IdTextStatus::kMalformed:
            snowflake_input_error(fcinfo, MALFORMED_ERROR(text));
    }
    PG_RETURN_DATUM(Int64GetDatum(result.id));
}

// The binary form is bigint's eight bytes; a negative one is refused as its text would be.
Datum snowflake_recv(PG_FUNCTION_ARGS) {
    StringInfo buffer = reinterpret_cast<StringInfo>(PG_GETARG_POINTER(0));
    PG_RETURN_DATUM(checked_id(pq_getmsgint64(buffer)));
}

// bigint to snowflake: the cast DEFAULT snowflake_nextval() and every bigint insert take.
Datum snowflake_from_bigint(PG_FUNCTION_ARGS) {
    PG_RETURN_DATUM(checked_id(PG_GETARG_INT64(0)));
}

// integer and smallint to snowflake, so that COALESCE(id, 0) and id IN (1, 2) find one type.
Datum snowflake_from_integer(PG_FUNCTION_ARGS) {
    PG_RETURN_DATUM(checked_id(PG_GETARG_INT32(0)));
}

Datum snowflake_from_smallint(PG_FUNCTION_ARGS) {
    PG_RETURN_DATUM(checked_id(PG_GETARG_INT16(0)));
}

// numeric to snowflake, rounded to the nearest integer as numeric to bigint rounds; the range is
// judged on the rounded value, so that a too large one is named as the type's, not bigint's.
Datum snowflake_from_numeric(PG_FUNCTION_ARGS) {
    const Datum value = PG_GETARG_DATUM(0);
    if (numeric_is_nan(DatumGetNumeric(value))) {
        ereport(ERROR,
                (errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
                 errmsg("cannot convert NaN to snowflake"), errhint("Use NULL for \"no id\".")));
    }
    const Datum rounded = DirectFunctionCall2(numeric_round, value, Int32GetDatum(0));
    const Datum largest = DirectFunctionCall1(int8_numeric, Int64GetDatum(PG_INT64_MAX));
    if (DatumGetInt32(DirectFunctionCall2(numeric_cmp, rounded, largest)) > 0) {
        report_too_large(DatumGetCString(DirectFunctionCall1(numeric_out, value)));
    }
    if (DatumGetInt32(DirectFunctionCall2(
            numeric_cmp, rounded, DirectFunctionCall1(int8_numeric, Int64GetDatum(0)))) < 0) {
        report_negative_value(DatumGetCString(DirectFunctionCall1(numeric_out, value)));
    }
    PG_RETURN_DATUM(DirectFunctionCall1(numeric_int8, rounded));
}

// Declares name, a function of the type with bigint's representation, as PostgreSQL's function for
// bigint, called with the same arguments. A C function of the library rather than a LANGUAGE
// internal declaration of PostgreSQL's: PostgreSQL finds a C function by OID in a hash table, but
// an internal function that is not one of its own by comparing its name with each of its built-in
// functions' names in turn, whenever a statement starts using it (doc/performance.md, case 10).
#define FORWARD_TO_BIGINT(name, builtin) \
    extern "C" {                         \
    PG_FUNCTION_INFO_V1(name);           \
    }                                    \
    Datum name(PG_FUNCTION_ARGS) {       \
        return builtin(fcinfo);          \
    }

FORWARD_TO_BIGINT(snowflake_out, int8out)
FORWARD_TO_BIGINT(snowflake_send, int8send)
FORWARD_TO_BIGINT(snowflake_to_numeric, int8_numeric)
FORWARD_TO_BIGINT(snowflake_to_integer, int84)
FORWARD_TO_BIGINT(snowflake_to_smallint, int82)
FORWARD_TO_BIGINT(snowflake_to_double, i8tod)
FORWARD_TO_BIGINT(snowflake_to_real, i8tof)
// The transitions of min(snowflake) and max(snowflake) (version 1.9; id_aggregates.cpp).
FORWARD_TO_BIGINT(snowflake_smaller, int8smaller)
FORWARD_TO_BIGINT(snowflake_larger, int8larger)
