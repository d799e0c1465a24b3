// The floor from stored keys after a start without a mark file (keys_floor.cpp). Include only
// after postgres.h.
#pragma once

#include "core/generator.hpp"
#include "pg/shared_state.hpp"

// At start-up: arms the floor after a start without a mark file, and keeps it armed across
// restarts until the keys of every database were read in one run.
void snowflake_arm_keys_floor(SnowflakeShared *shared, bool mark_file_missing);

// In _PG_init: the background worker that reads the keys once the server can generate.
void snowflake_register_keys_reader();

// Before a backend's first id: waits, cancellably, until the keys of every database were read
// for this node pair, and refuses while a key beyond the window stops generation.
void snowflake_await_keys_floor(SnowflakeShared *shared, snowflake::Node node);

// At a clean stop: whether nothing was issued since a stored key raised the generator, or a key
// beyond the window still stops it, in which case the final mark must not keep the generator's
// timestamp (the key may be gone by the next start), and the floor is armed again instead, so
// that the next start reads the keys afresh.
bool snowflake_keys_floor_holds_generation(SnowflakeShared *shared);

// The key that raised the generator ahead of the clock and where it is stored, for a refusal that
// names it.
void snowflake_describe_key_floor(const SnowflakeShared *shared, int64 *key, char *source,
                                  size_t source_size);
