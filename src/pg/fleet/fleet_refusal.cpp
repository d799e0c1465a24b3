// snowflake_nextval()'s refusal: with snowflake.on_duplicate_node = refuse, a live member holding
// this server's pair makes it refuse from the moment its answer comes, until a whole round no
// longer finds it; and a newly started server issues no id before its first round has ended. No
// other problem ever stops generation. The error-boundary rules are stated at the top of
// module.cpp.

extern "C" {
#include "postgres.h"

#include "storage/condition_variable.h"
#include "storage/lwlock.h"
#include "utils/timestamp.h"
}

#include "pg/compat.hpp"
#include "pg/fleet/fleet_refusal.hpp"
#include "pg/fleet/fleet_shared.hpp"
#include "pg/settings.hpp"
#include "pg/shared_state.hpp"

namespace {

// What a round may take beyond its members' time limit (the worker's own start, starting the
// connections, the assessment) before a backend that waits for the first one gives up.
constexpr int kRoundOverheadMs = 1000;

}  // namespace

void snowflake_report_node_held(int datacenter_id, int machine_id) {
    char holder[kMemberTextBytes] = "another member";
    if (snowflake_fleet_shared != nullptr) {
        LWLockAcquire(snowflake_fleet_shared->lock, LW_SHARED);
        if (snowflake_fleet_shared->node_holder[0] != '\0') {
            strlcpy(holder, snowflake_fleet_shared->node_holder, sizeof(holder));
        }
        LWLockRelease(snowflake_fleet_shared->lock);
    }
    ereport(ERROR,
            (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
             errmsg("node pair (%d, %d) is also held by live fleet member %s", datacenter_id,
                    machine_id, holder),
             errdetail("Two servers with one node pair issue the same ids; with "
                       "snowflake.on_duplicate_node = refuse this server generates none while "
                       "the fleet guard finds the other one."),
             errhint("Give one of the two servers its own snowflake.datacenter_id or "
                     "snowflake.machine_id and reload, or stop the one that should not "
                     "generate; generation resumes by itself at the next check.")));
    pg_unreachable();
}

bool snowflake_first_fleet_check_seen = false;

void snowflake_wait_for_first_fleet_check(SnowflakeShared *shared, int64_t node_bits) {
    if (snowflake_fleet_shared == nullptr ||
        snowflake_fleet_shared->first_check_done.load(std::memory_order_acquire)) {
        snowflake_first_fleet_check_seen = true;
        return;
    }
    if (!snowflake_fleet_guard_is_on() ||
        snowflake_on_duplicate_node_setting != kFleetDuplicateRefuse) {
        return;
    }
    // Long enough for a round that starts now, or that started a moment ago; a worker that is
    // not running (dead and waiting to be started again) makes this refuse, not wait forever.
    const TimestampTz called_at = GetCurrentTimestamp();
    const int64 allowed_us =
        static_cast<int64>(snowflake_member_time_limit_ms() + kRoundOverheadMs) * 1000;
    const uint32 wait_event = snowflake_wait_event("SnowflakeFirstFleetCheck");
    ConditionVariablePrepareToSleep(&snowflake_fleet_shared->first_check_cv);
    for (;;) {
        if (snowflake_fleet_shared->first_check_done.load(std::memory_order_acquire)) {
            snowflake_first_fleet_check_seen = true;
            break;
        }
        if (shared->fenced_node_bits.load(std::memory_order_acquire) == node_bits) {
            break;
        }
        const TimestampTz started_at =
            snowflake_fleet_shared->round_started_at.load(std::memory_order_relaxed);
        const TimestampTz deadline = Max(called_at, started_at) + allowed_us;
        const long remaining_ms =
            static_cast<long>((deadline - GetCurrentTimestamp() + 999) / 1000);
        if (remaining_ms <= 0) {
            ConditionVariableCancelSleep();
            ereport(ERROR,
                    (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                     errmsg("the fleet guard's first check since the server started has not "
                            "finished"),
                     errdetail("With snowflake.on_duplicate_node = refuse this server issues no "
                               "id until the fleet guard has heard from every member of "
                               "snowflake.fleet or given up on it; this call waited %d ms.",
                               static_cast<int>((GetCurrentTimestamp() - called_at) / 1000)),
                     errhint("Try again in a moment. If this persists, the server log says why "
                             "the \"snowflake fleet guard\" worker is not running; to generate "
                             "without waiting, set snowflake.on_duplicate_node = warn and "
                             "reload.")));
        }
        // Wakes at every publication; ends, like any wait, on a cancel or statement_timeout.
        (void)ConditionVariableTimedSleep(&snowflake_fleet_shared->first_check_cv, remaining_ms,
                                          wait_event);
    }
    ConditionVariableCancelSleep();
}
