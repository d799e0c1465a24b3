// The floor from stored keys after a start without a mark file (keys_floor.cpp). Include only
// after postgres.h.
#pragma once

#include "core/generator.hpp"
#include "pg/shared_state.hpp"

// At start-up: arms the floor after a start without a mark file, and keeps it armed across
// restarts until every database was checked.
void snowflake_arm_keys_floor(SnowflakeShared *shared, bool mark_file_missing);

// Raises the generator above this database's stored keys of the node pair that are ahead of the
// clock (of columns whose default is the function nextval_oid), unless a backend of the same
// database already did since the start.
void snowflake_check_database_keys(SnowflakeShared *shared, Oid nextval_oid, snowflake::Node node);

// At a clean stop: whether nothing was issued since a stored key raised the generator, in which
// case the final mark must not keep that key's timestamp (the key may be gone by the next start),
// and the floor is armed again instead, so that the next start reads the keys afresh.
bool snowflake_keys_floor_holds_generation(SnowflakeShared *shared);

// The key that raised the generator ahead of the clock (-1 for a table that could not be read)
// and where it is stored, for a refusal that names it.
void snowflake_describe_key_floor(const SnowflakeShared *shared, int64 *key, char *source,
                                  size_t source_size);
