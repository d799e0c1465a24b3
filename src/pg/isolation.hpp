// The refusal of a transaction isolation level that the conversion of a key and the maintenance
// of time partitions cannot work in (isolation.cpp). Include only after postgres.h.
#pragma once

// Refuses a REPEATABLE READ or SERIALIZABLE transaction before anything is done: the function
// must read the tables as they are once its locks are held, and such a transaction's snapshot
// may be older.
void snowflake_refuse_snapshot_isolation(const char *function_name);
