// The fleet guard (fleet_guard.cpp): a background worker that asks every server of
// snowflake.fleet, every snowflake.fleet_check_interval, for its node pair, its clock and its
// instance token, and keeps what it found in shared memory. Include only after postgres.h: it is
// part of the glue.
#pragma once

#include <cstdint>

extern "C" {
#include "postgres.h"

#include "utils/guc.h"
}

#include "pg/settings.hpp"
#include "pg/shared_state.hpp"

// Shared memory of the guard's results, requested and attached with the rest (module.cpp).
Size snowflake_fleet_memory_size();
void snowflake_request_fleet_lock();
// Creates the results and this start's instance token, in the postmaster.
void snowflake_attach_fleet_memory();

// Registers the worker; only while shared_preload_libraries is loaded.
void snowflake_register_fleet_guard();

// snowflake.instance_token, read-only: the token of the running server, from shared memory.
const char *snowflake_show_instance_token();

// Accepts a fleet list only if it has at most the members shared memory holds and libpq can
// parse each of them.
bool snowflake_check_fleet_setting(char **new_value, void **extra, GucSource source);

// Whether snowflake_nextval() refuses these node bits: the guard found a live duplicate holding
// them and this backend's snowflake.on_duplicate_node is refuse. Read on every call, so inline.
inline bool snowflake_node_refused(const SnowflakeShared *shared, int64_t node_bits) {
    return shared->fenced_node_bits.load(std::memory_order_relaxed) == node_bits &&
           snowflake_on_duplicate_node_setting == kFleetDuplicateRefuse;
}

// The error of snowflake_nextval() while the guard, with snowflake.on_duplicate_node = refuse,
// has seen another live member holding this server's node pair (SnowflakeShared's
// fenced_node_bits): it names that member and the ways out.
[[noreturn]] void snowflake_report_node_held(int datacenter_id, int machine_id);
