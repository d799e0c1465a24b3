// The extension's settings: one variable per setting (settings.cpp), named
// snowflake_<setting>_setting, holding what the current backend sees. settings.cpp defines the
// node ids, module.cpp the others.
#pragma once

extern int snowflake_datacenter_id_setting;
extern int snowflake_machine_id_setting;
// In milliseconds, up to kMaxClockRollbackWaitLimitMs.
extern int snowflake_max_clock_rollback_wait_setting;
inline constexpr int kMaxClockRollbackWaitLimitMs = 60000;
// In milliseconds: how far ahead of the clock a stored key may raise the generator
// (keys_floor.cpp), up to kKeyFloorMaxLeadLimitMs.
extern int snowflake_key_floor_max_lead_setting;
inline constexpr int kKeyFloorMaxLeadLimitMs = 3600000;
extern bool snowflake_time_predicates_setting;
// The fleet guard's (fleet_guard.cpp): libpq connection strings separated by semicolons.
extern char *snowflake_fleet_setting;
// In seconds; 0 turns the guard off.
extern int snowflake_fleet_check_interval_setting;
// A FleetDuplicateAction.
extern int snowflake_on_duplicate_node_setting;
// In milliseconds.
extern int snowflake_max_clock_offset_setting;
// In seconds: how much of one scheduled run an owner's tables may have (scheduled_run.cpp).
extern int snowflake_partition_owner_share_setting;

// What the fleet guard does when another live server holds this server's node pair.
enum FleetDuplicateAction { kFleetDuplicateWarn, kFleetDuplicateRefuse };

// Defines snowflake.datacenter_id and snowflake.machine_id, keeping what the configuration gave
// each when the server rejects it; from _PG_init.
void snowflake_define_node_settings();

// The value postgresql.conf gave a node-id setting when the server rejected it at start (out of
// range, not a number), or null.
const char *snowflake_rejected_setting_value(const char *name);
