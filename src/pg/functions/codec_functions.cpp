// SQL entry points that need no shared state: decoding, encoding and the time-range helpers.
// The error-boundary rules are stated at the top of module.cpp.

extern "C" {
#include "postgres.h"

#include "access/htup_details.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/datetime.h"
#include "utils/timestamp.h"

PG_FUNCTION_INFO_V1(snowflake_decode);
PG_FUNCTION_INFO_V1(snowflake_timestamp);
PG_FUNCTION_INFO_V1(snowflake_unix_ms);
PG_FUNCTION_INFO_V1(snowflake_datacenter_id);
PG_FUNCTION_INFO_V1(snowflake_machine_id);
PG_FUNCTION_INFO_V1(snowflake_sequence);
PG_FUNCTION_INFO_V1(snowflake_encode_unix_ms);
PG_FUNCTION_INFO_V1(snowflake_encode_timestamptz);
PG_FUNCTION_INFO_V1(snowflake_min_id);
PG_FUNCTION_INFO_V1(snowflake_max_id);
}

#include "core/codec.hpp"
#include "core/layout.hpp"
#include "pg/id_bounds.hpp"

namespace {

using snowflake::CodecStatus;

// The sign bit is never set in a Snowflake id, so a negative bigint is a caller's mistake.
[[noreturn]] void report_negative_id(int64 id) {
    ereport(ERROR, (errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
                    errmsg("a Snowflake id cannot be negative: %lld", static_cast<long long>(id))));
    pg_unreachable();
}

// One wording for every field, naming it and its range (doc/reference.md "Encoding").
[[noreturn]] void report_field_out_of_range(CodecStatus status, const snowflake::Parts &parts) {
    const snowflake::FieldError field = snowflake::field_error(status, parts);
    ereport(ERROR, (errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
                    errmsg("Snowflake %s %lld is out of range: it must be between %lld and %lld",
                           field.name, static_cast<long long>(field.value),
                           static_cast<long long>(field.min), static_cast<long long>(field.max))));
    pg_unreachable();
}

// A timestamptz caller knows the instant, not Unix ms, so the range is shown as instants too.
[[noreturn]] void report_created_at_out_of_range(TimestampTz created_at) {
    char value_text[MAXDATELEN + 1];
    char min_text[MAXDATELEN + 1];
    strlcpy(value_text, timestamptz_to_str(created_at), sizeof(value_text));
    strlcpy(min_text, timestamptz_to_str(snowflake::pg_us_from_unix_ms(snowflake::kEpochUnixMs)),
            sizeof(min_text));
    ereport(ERROR,
            (errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
             errmsg("Snowflake created_at %s is out of range: it must be between %s and %s",
                    value_text, min_text,
                    timestamptz_to_str(snowflake::pg_us_from_unix_ms(snowflake::kMaxUnixMs)))));
    pg_unreachable();
}

// Every decoding entry point shares the negative-id check through this.
snowflake::Parts decoded_parts(int64 id) {
    const snowflake::DecodeResult decoded = snowflake::decode(id);
    if (decoded.status != CodecStatus::kOk) {
        report_negative_id(id);
    }
    return decoded.parts;
}

// Both encode forms report the first field out of range the same way.
int64 encoded_id(const snowflake::Parts &parts) {
    const snowflake::EncodeResult encoded = snowflake::encode(parts);
    if (encoded.status != CodecStatus::kOk) {
        report_field_out_of_range(encoded.status, parts);
    }
    return encoded.id;
}

// Looking up and blessing snowflake_parts once per call site keeps per-row decoding cheap.
TupleDesc decode_result_tupdesc(FunctionCallInfo fcinfo) {
    if (fcinfo->flinfo->fn_extra == nullptr) {
        TupleDesc tupdesc;
        if (get_call_result_type(fcinfo, nullptr, &tupdesc) != TYPEFUNC_COMPOSITE) {
            ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                            errmsg("snowflake_decode() must return a composite type")));
        }
        MemoryContext caller_context = MemoryContextSwitchTo(fcinfo->flinfo->fn_mcxt);
        tupdesc = BlessTupleDesc(CreateTupleDescCopy(tupdesc));
        MemoryContextSwitchTo(caller_context);
        fcinfo->flinfo->fn_extra = tupdesc;
    }
    return static_cast<TupleDesc>(fcinfo->flinfo->fn_extra);
}

}  // namespace

// All fields at once, as the snowflake_parts row type.
Datum snowflake_decode(PG_FUNCTION_ARGS) {
    const snowflake::Parts parts = decoded_parts(PG_GETARG_INT64(0));
    TupleDesc tupdesc = decode_result_tupdesc(fcinfo);
    Datum values[5] = {
        TimestampTzGetDatum(snowflake::pg_us_from_unix_ms(parts.unix_ms)),
        Int64GetDatum(parts.unix_ms),
        Int32GetDatum(parts.datacenter_id),
        Int32GetDatum(parts.machine_id),
        Int32GetDatum(parts.sequence),
    };
    bool nulls[5] = {};
    PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

// The scalar accessors spare callers the row construction when they need one field.
Datum snowflake_timestamp(PG_FUNCTION_ARGS) {
    PG_RETURN_TIMESTAMPTZ(snowflake::pg_us_from_unix_ms(decoded_parts(PG_GETARG_INT64(0)).unix_ms));
}

Datum snowflake_unix_ms(PG_FUNCTION_ARGS) {
    PG_RETURN_INT64(decoded_parts(PG_GETARG_INT64(0)).unix_ms);
}

Datum snowflake_datacenter_id(PG_FUNCTION_ARGS) {
    PG_RETURN_INT32(decoded_parts(PG_GETARG_INT64(0)).datacenter_id);
}

Datum snowflake_machine_id(PG_FUNCTION_ARGS) {
    PG_RETURN_INT32(decoded_parts(PG_GETARG_INT64(0)).machine_id);
}

Datum snowflake_sequence(PG_FUNCTION_ARGS) {
    PG_RETURN_INT32(decoded_parts(PG_GETARG_INT64(0)).sequence);
}

// Builds an id from Unix milliseconds, for tests, backfills and id-range arithmetic.
Datum snowflake_encode_unix_ms(PG_FUNCTION_ARGS) {
    PG_RETURN_INT64(encoded_id(
        {PG_GETARG_INT64(0), PG_GETARG_INT32(1), PG_GETARG_INT32(2), PG_GETARG_INT32(3)}));
}

// Sub-millisecond digits are truncated toward the past (doc/reference.md "Encoding").
Datum snowflake_encode_timestamptz(PG_FUNCTION_ARGS) {
    const TimestampTz created_at = PG_GETARG_TIMESTAMPTZ(0);
    const int64 unix_ms = snowflake::unix_ms_floor_from_pg_us(created_at);
    if (TIMESTAMP_NOT_FINITE(created_at) || unix_ms < snowflake::kEpochUnixMs ||
        unix_ms > snowflake::kMaxUnixMs) {
        report_created_at_out_of_range(created_at);
    }
    PG_RETURN_INT64(
        encoded_id({unix_ms, PG_GETARG_INT32(1), PG_GETARG_INT32(2), PG_GETARG_INT32(3)}));
}

// Lower bound of an id range; a sub-millisecond instant rounds up so the bound stays exact.
Datum snowflake_min_id(PG_FUNCTION_ARGS) {
    PG_RETURN_INT64(snowflake_min_id_at(PG_GETARG_TIMESTAMPTZ(0)));
}

// Upper bound of an id range; a sub-millisecond instant rounds down so the bound stays exact.
Datum snowflake_max_id(PG_FUNCTION_ARGS) {
    PG_RETURN_INT64(snowflake::max_id_at_or_before(
        snowflake::unix_ms_floor_from_pg_us(PG_GETARG_TIMESTAMPTZ(0))));
}
