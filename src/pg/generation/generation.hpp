// The door of the generation room (src/pg/generation/): snowflake_nextval() and snowflake_info()
// (generate.cpp), the settled bound's SQL functions (bound_functions.cpp), and the warning of a
// restored copy that still has its original's node ids (restored_copy.cpp). Generation asks the
// mark, the floor from stored keys, the settled bound and the fleet guard; only the changes room
// asks it, for the versions it stamps.
// Include only after postgres.h.
#pragma once

#include "pg/shared_state.hpp"

// One id for the calling transaction, exactly as snowflake_nextval() returns it: claimed for
// the settled bound and covered by the mark. Raises an ERROR where snowflake_nextval() would.
int64 snowflake_draw_id();

// At start-up, records and logs whether this server starts as a restored copy of another.
void snowflake_note_start_from_backup(SnowflakeShared *shared);

// Warns the session, before its first id, that this restored copy still has its original's
// node ids.
void snowflake_warn_if_restored_copy(const SnowflakeShared *shared);
