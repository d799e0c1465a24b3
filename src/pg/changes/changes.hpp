// The door of the changes room (src/pg/changes/): the version stamp (stamp.cpp), the tombstones
// (tombstones.cpp) and the utility hook that keeps the rows of partitions that leave a tracked
// table (partition_moves.cpp). The room asks generation for the versions it stamps.
// Include only after postgres.h.
#pragma once

// Installs the utility hook of tracked tables, once per backend, from _PG_init.
void snowflake_install_changes_hook();
