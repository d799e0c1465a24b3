// The rows of snowflake_partitioned_tables and their tables (partition_setups.cpp). Include after
// postgres.h.
#pragma once

// Removes the rows of one table, awaiting a row another transaction holds; with InvalidOid,
// every row whose table no longer exists, skipping rows another transaction holds. Outside the
// executor, so that no publication of the configuration table can fail it.
void remove_setups(Oid config_table, Oid parent);
