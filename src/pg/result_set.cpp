// The materialized result set of a set-returning function (result_set.hpp). The error-boundary
// rules are stated at the top of module.cpp.

extern "C" {
#include "postgres.h"

#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/execnodes.h"
#include "utils/memutils.h"
}

#include "pg/result_set.hpp"

Tuplestorestate *snowflake_begin_result_set(FunctionCallInfo fcinfo, const char *function_name,
                                            TupleDesc *tupdesc) {
    auto *result_info = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);
    if (result_info == nullptr || !IsA(result_info, ReturnSetInfo) ||
        (result_info->allowedModes & SFRM_Materialize) == 0) {
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("%s must be called in a FROM clause or as a set-returning function",
                               function_name)));
    }
    if (get_call_result_type(fcinfo, nullptr, tupdesc) != TYPEFUNC_COMPOSITE) {
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("%s must return a composite type", function_name)));
    }
    MemoryContext caller_context =
        MemoryContextSwitchTo(result_info->econtext->ecxt_per_query_memory);
    *tupdesc = CreateTupleDescCopy(*tupdesc);
    Tuplestorestate *store = tuplestore_begin_heap(true, false, work_mem);
    MemoryContextSwitchTo(caller_context);
    result_info->returnMode = SFRM_Materialize;
    result_info->setResult = store;
    result_info->setDesc = *tupdesc;
    return store;
}
