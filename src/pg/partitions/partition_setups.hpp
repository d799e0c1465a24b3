// The rows of snowflake_partitioned_tables and their tables (partition_setups.cpp). Include after
// postgres.h, inside an SPI connection.
#pragma once

// Removes every row whose table no longer exists, as the configuration table's owner.
void forget_dropped_setups(Oid config_table);
