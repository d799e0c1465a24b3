// snowflake_nextval()'s refusal while the fleet guard finds another live member holding this
// server's node pair, or has not yet finished its first check (fleet_refusal.cpp). Include only
// after postgres.h: it is part of the glue.
#pragma once

#include <cstdint>

extern "C" {
#include "postgres.h"
}

#include "pg/settings.hpp"
#include "pg/shared_state.hpp"

// Whether the guard found a live duplicate holding these node bits and this backend's
// snowflake.on_duplicate_node is refuse: what snowflake_fleet_summary() shows as refusing.
inline bool snowflake_node_fenced(const SnowflakeShared *shared, int64_t node_bits) {
    return shared->fenced_node_bits.load(std::memory_order_relaxed) == node_bits &&
           snowflake_on_duplicate_node_setting == kFleetDuplicateRefuse;
}

// Whether this backend has seen the guard's first check since the server started end; until it
// has, snowflake_node_refused() calls snowflake_wait_for_first_fleet_check().
extern bool snowflake_first_fleet_check_seen;

// With the guard on and snowflake.on_duplicate_node = refuse, waits until the guard's first
// check since the server started has ended or has found these node bits held; refuses (55000)
// when that does not happen within the check's time limit. Cancellable; no wait otherwise.
void snowflake_wait_for_first_fleet_check(SnowflakeShared *shared, int64_t node_bits);

// Whether snowflake_nextval() refuses these node bits (snowflake_node_fenced), after waiting for
// the guard's first check if this backend has not seen it end. Read on every call, so inline:
// past the first check it costs a test of a local flag and one relaxed load.
inline bool snowflake_node_refused(SnowflakeShared *shared, int64_t node_bits) {
    if (!snowflake_first_fleet_check_seen) {
        snowflake_wait_for_first_fleet_check(shared, node_bits);
    }
    return snowflake_node_fenced(shared, node_bits);
}

// The error of snowflake_nextval() while the guard, with snowflake.on_duplicate_node = refuse,
// has seen another live member holding this server's node pair (SnowflakeShared's
// fenced_node_bits): it names that member and the ways out.
[[noreturn]] void snowflake_report_node_held(int datacenter_id, int machine_id);
