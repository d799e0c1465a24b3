// The materialized result set of a set-returning function, as snowflake_check_peers() and
// snowflake_fleet_status() build theirs. Include only after postgres.h: it is part of the glue.
#pragma once

extern "C" {
#include "fmgr.h"
#include "utils/tuplestore.h"
}

// Sets up the result set in the per-query context and returns its store and row type; a call
// from a context that takes no set, or a function not declared to return rows, is an error that
// names function_name.
Tuplestorestate *snowflake_begin_result_set(FunctionCallInfo fcinfo, const char *function_name,
                                            TupleDesc *tupdesc);
