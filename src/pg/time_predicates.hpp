// The planner hook for snowflake_timestamp(column) predicates (time_predicates.cpp).
#pragma once

// Installs the hook, chained after any hook installed before.
void snowflake_install_planner_hook();
