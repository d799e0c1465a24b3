// The door of the WAL room (src/pg/wal/): the extension's resource manager, which sends each of
// its records (src/pg/wal_records.hpp) to the room that replays it. Include only after
// postgres.h.
#pragma once

// Registers the resource manager; from _PG_init, while the library is preloaded.
void snowflake_register_wal_resource_manager();
