// The floor from stored keys after a start without a mark file (keys_floor.cpp). Include only
// after postgres.h.
#pragma once

#include "pg/shared_state.hpp"

// At start-up: arms the floor after a start without a mark file, and keeps it armed across
// restarts until every database was checked.
void snowflake_arm_keys_floor(SnowflakeShared *shared, bool mark_file_missing);

// Raises the generator above the highest key of this database's columns whose default is the
// function nextval_oid, unless a backend of the same database already did since the start.
void snowflake_check_database_keys(SnowflakeShared *shared, Oid nextval_oid);
