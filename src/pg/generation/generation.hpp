// The door of the generation room (src/pg/generation/): snowflake_nextval() and snowflake_info()
// (generate.cpp), the settled bound's SQL functions (bound_functions.cpp), and the warning of a
// restored copy that still has its original's node ids (restored_copy.cpp). Generation asks the
// mark, the floor from stored keys, the settled bound and the fleet guard; no room asks it.
// Include only after postgres.h.
#pragma once

#include "pg/shared_state.hpp"

// At start-up, records and logs whether this server starts as a restored copy of another.
void snowflake_note_start_from_backup(SnowflakeShared *shared);

// Warns the session, before its first id, that this restored copy still has its original's
// node ids.
void snowflake_warn_if_restored_copy(const SnowflakeShared *shared);
