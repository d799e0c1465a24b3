// The fleet guard's two SQL functions: snowflake_fleet_status(), one row per member as the last
// check found it, and snowflake_fleet_summary(), one row of counts and whether this server
// refuses to generate. They read the guard's shared memory under its lock, taken shared.

extern "C" {
#include "postgres.h"

#include "access/htup_details.h"
#include "fmgr.h"
#include "funcapi.h"
#include "nodes/execnodes.h"
#include "storage/lwlock.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

PG_FUNCTION_INFO_V1(snowflake_fleet_status);
PG_FUNCTION_INFO_V1(snowflake_fleet_summary);
}

#include "core/codec.hpp"
#include "pg/fleet/fleet_refusal.hpp"
#include "pg/fleet/fleet_shared.hpp"
#include "pg/settings.hpp"
#include "pg/shared_state.hpp"

namespace {

// Refuses when the library is not preloaded: there is no guard and nothing to show.
void require_fleet_memory() {
    if (snowflake_fleet_shared == nullptr) {
        snowflake_report_not_preloaded(
            "The fleet guard runs and keeps its results only in a server that preloads the "
            "library.");
    }
}

// The columns of a row of snowflake_fleet_status().
constexpr int kStatusColumnCount = 7;

}  // namespace

// One row per member of the last check.
Datum snowflake_fleet_status(PG_FUNCTION_ARGS) {
    require_fleet_memory();
    InitMaterializedSRF(fcinfo, 0);
    const auto *result_info = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);
    Tuplestorestate *store = result_info->setResult;
    const TupleDesc tupdesc = result_info->setDesc;
    LWLockAcquire(snowflake_fleet_shared->lock, LW_SHARED);
    const TimestampTz checked_at = snowflake_fleet_shared->checked_at;
    const int count = checked_at != 0 ? snowflake_fleet_shared->member_count : 0;
    auto *statuses = static_cast<MemberStatus *>(palloc(sizeof(MemberStatus) * Max(count, 1)));
    if (count > 0) {
        memcpy(statuses, snowflake_fleet_shared->members, sizeof(MemberStatus) * count);
    }
    LWLockRelease(snowflake_fleet_shared->lock);
    for (int r = 0; r < count; r++) {
        const MemberStatus &status = statuses[r];
        const bool ids_known = status.answered && !status.self;
        Datum values[kStatusColumnCount];
        bool nulls[kStatusColumnCount];
        int i = 0;
        values[i] = CStringGetTextDatum(status.member);
        nulls[i++] = false;
        values[i] = BoolGetDatum(status.self);
        nulls[i++] = false;
        values[i] =
            Int32GetDatum(status.self ? snowflake_datacenter_id_setting : status.datacenter_id);
        nulls[i++] = status.self ? snowflake_datacenter_id_setting < 0
                                 : !ids_known || status.datacenter_id < 0;
        values[i] = Int32GetDatum(status.self ? snowflake_machine_id_setting : status.machine_id);
        nulls[i++] =
            status.self ? snowflake_machine_id_setting < 0 : !ids_known || status.machine_id < 0;
        values[i] = Int64GetDatum(status.clock_offset_ms);
        nulls[i++] = !status.answered;
        values[i] = CStringGetTextDatum(status.problem_words);
        nulls[i++] = status.problem_words[0] == '\0';
        values[i] = TimestampTzGetDatum(checked_at);
        nulls[i++] = false;
        Assert(i == kStatusColumnCount);
        tuplestore_putvalues(store, tupdesc, values, nulls);
    }
    return static_cast<Datum>(0);
}

// When the guard last checked, how many members it saw and how many with a problem, and
// whether this server refuses to generate.
Datum snowflake_fleet_summary(PG_FUNCTION_ARGS) {
    require_fleet_memory();
    TupleDesc tupdesc;
    if (get_call_result_type(fcinfo, nullptr, &tupdesc) != TYPEFUNC_COMPOSITE) {
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("snowflake_fleet_summary() must return a composite type")));
    }
    tupdesc = BlessTupleDesc(tupdesc);
    LWLockAcquire(snowflake_fleet_shared->lock, LW_SHARED);
    const TimestampTz checked_at = snowflake_fleet_shared->checked_at;
    const int count = checked_at != 0 ? snowflake_fleet_shared->member_count : 0;
    int with_problems = 0;
    for (int m = 0; m < count; m++) {
        with_problems += snowflake_fleet_shared->members[m].problem_bits != 0 ? 1 : 0;
    }
    // What snowflake_nextval() in this session would do.
    const snowflake::NodeResult node =
        snowflake::make_node(snowflake_datacenter_id_setting, snowflake_machine_id_setting);
    const bool refusing = node.status == snowflake::CodecStatus::kOk &&
                          snowflake_node_fenced(snowflake_shared, node.node.bits);
    LWLockRelease(snowflake_fleet_shared->lock);
    constexpr int kSummaryColumnCount = 4;
    Datum values[kSummaryColumnCount];
    bool nulls[kSummaryColumnCount];
    int i = 0;
    values[i] = TimestampTzGetDatum(checked_at);
    nulls[i++] = checked_at == 0;
    values[i] = Int32GetDatum(count);
    nulls[i++] = false;
    values[i] = Int32GetDatum(with_problems);
    nulls[i++] = false;
    values[i] = BoolGetDatum(refusing);
    nulls[i++] = false;
    Assert(i == kSummaryColumnCount);
    PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}
