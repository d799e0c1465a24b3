// The extension's settings, defined in module.cpp: one variable per setting, named
// snowflake_<setting>_setting, holding what the current backend sees.
#pragma once

extern int snowflake_datacenter_id_setting;
extern int snowflake_machine_id_setting;
// In milliseconds.
extern int snowflake_max_clock_rollback_wait_setting;
extern bool snowflake_time_predicates_setting;

// The value postgresql.conf gave a node-id setting when the server rejected it at start (out of
// range, not a number), or null.
const char *snowflake_rejected_setting_value(const char *name);
