// The snowflake type's functions that are bigint's own code under the type's signatures: each
// forwards its call, arguments untouched, to PostgreSQL's function for bigint, since the two types
// share their representation. They are C functions of this library rather than LANGUAGE internal
// declarations of PostgreSQL's: PostgreSQL finds a C function by its OID in a hash table, but a
// LANGUAGE internal function that is not one of its own by searching its list of built-in
// functions by name, one string comparison at a time, whenever a statement starts using it
// (fmgr_info), which costs a short statement several microseconds (doc/performance.md, case 10).

extern "C" {
#include "postgres.h"

#include "fmgr.h"
#include "utils/fmgrprotos.h"
}

// Declares the SQL-callable function name as PostgreSQL's builtin, called with the same arguments.
#define FORWARD(name, builtin)     \
    extern "C" {                   \
    PG_FUNCTION_INFO_V1(name);     \
    }                              \
    Datum name(PG_FUNCTION_ARGS) { \
        return builtin(fcinfo);    \
    }

// Output, binary output, hashes, window frames, min() and max(), casts out.
FORWARD(snowflake_out, int8out)
FORWARD(snowflake_send, int8send)
FORWARD(snowflake_hash, hashint8)
FORWARD(snowflake_hash_extended, hashint8extended)
FORWARD(snowflake_in_range, in_range_int8_int8)
FORWARD(snowflake_smaller, int8smaller)
FORWARD(snowflake_larger, int8larger)
FORWARD(snowflake_to_numeric, int8_numeric)
FORWARD(snowflake_to_integer, int84)
FORWARD(snowflake_to_smallint, int82)

// Comparisons of the type with itself and with bigint, integer and smallint, both ways round.
FORWARD(snowflake_eq_snowflake_snowflake, int8eq)
FORWARD(snowflake_ne_snowflake_snowflake, int8ne)
FORWARD(snowflake_lt_snowflake_snowflake, int8lt)
FORWARD(snowflake_le_snowflake_snowflake, int8le)
FORWARD(snowflake_gt_snowflake_snowflake, int8gt)
FORWARD(snowflake_ge_snowflake_snowflake, int8ge)
FORWARD(snowflake_cmp_snowflake_snowflake, btint8cmp)
FORWARD(snowflake_eq_snowflake_bigint, int8eq)
FORWARD(snowflake_ne_snowflake_bigint, int8ne)
FORWARD(snowflake_lt_snowflake_bigint, int8lt)
FORWARD(snowflake_le_snowflake_bigint, int8le)
FORWARD(snowflake_gt_snowflake_bigint, int8gt)
FORWARD(snowflake_ge_snowflake_bigint, int8ge)
FORWARD(snowflake_cmp_snowflake_bigint, btint8cmp)
FORWARD(snowflake_eq_bigint_snowflake, int8eq)
FORWARD(snowflake_ne_bigint_snowflake, int8ne)
FORWARD(snowflake_lt_bigint_snowflake, int8lt)
FORWARD(snowflake_le_bigint_snowflake, int8le)
FORWARD(snowflake_gt_bigint_snowflake, int8gt)
FORWARD(snowflake_ge_bigint_snowflake, int8ge)
FORWARD(snowflake_cmp_bigint_snowflake, btint8cmp)
FORWARD(snowflake_eq_snowflake_integer, int84eq)
FORWARD(snowflake_ne_snowflake_integer, int84ne)
FORWARD(snowflake_lt_snowflake_integer, int84lt)
FORWARD(snowflake_le_snowflake_integer, int84le)
FORWARD(snowflake_gt_snowflake_integer, int84gt)
FORWARD(snowflake_ge_snowflake_integer, int84ge)
FORWARD(snowflake_cmp_snowflake_integer, btint84cmp)
FORWARD(snowflake_eq_integer_snowflake, int48eq)
FORWARD(snowflake_ne_integer_snowflake, int48ne)
FORWARD(snowflake_lt_integer_snowflake, int48lt)
FORWARD(snowflake_le_integer_snowflake, int48le)
FORWARD(snowflake_gt_integer_snowflake, int48gt)
FORWARD(snowflake_ge_integer_snowflake, int48ge)
FORWARD(snowflake_cmp_integer_snowflake, btint48cmp)
FORWARD(snowflake_eq_snowflake_smallint, int82eq)
FORWARD(snowflake_ne_snowflake_smallint, int82ne)
FORWARD(snowflake_lt_snowflake_smallint, int82lt)
FORWARD(snowflake_le_snowflake_smallint, int82le)
FORWARD(snowflake_gt_snowflake_smallint, int82gt)
FORWARD(snowflake_ge_snowflake_smallint, int82ge)
FORWARD(snowflake_cmp_snowflake_smallint, btint82cmp)
FORWARD(snowflake_eq_smallint_snowflake, int28eq)
FORWARD(snowflake_ne_smallint_snowflake, int28ne)
FORWARD(snowflake_lt_smallint_snowflake, int28lt)
FORWARD(snowflake_le_smallint_snowflake, int28le)
FORWARD(snowflake_gt_smallint_snowflake, int28gt)
FORWARD(snowflake_ge_smallint_snowflake, int28ge)
FORWARD(snowflake_cmp_smallint_snowflake, btint28cmp)
