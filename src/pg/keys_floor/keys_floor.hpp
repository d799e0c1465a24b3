// The floor from stored keys after a start without a mark file of this data directory's history:
// the gate a backend passes before its first id (keys_floor.cpp), and the background workers that
// read the keys (keys_readers.cpp). Include only after postgres.h.
#pragma once

#include <cstdint>

#include "core/generator.hpp"
#include "pg/shared_state.hpp"

// What the start found, as far as the floor is concerned.
enum class KeysFloorStart : uint8_t {
    kMarkTrusted,    // a mark file of this cluster
    kMarkMissing,    // no mark file
    kMarkForeign,    // a mark file another cluster wrote, or one of the first format (no cluster)
    kBinaryUpgrade,  // one of pg_upgrade's runs, which reads nothing
};

// At start-up: arms the floor after a start without a mark file of this data directory's history,
// and keeps it armed across restarts until the keys of every database were read in one run. A
// pg_upgrade run arms the next start.
void snowflake_arm_keys_floor(SnowflakeShared *shared, KeysFloorStart start);

// Before a backend's first id: starts the read if none runs, waits, cancellably, until the keys
// of every database were read for this node pair, and refuses while a key beyond the window stops
// generation.
void snowflake_await_keys_floor(SnowflakeShared *shared, snowflake::Node node);

// At a clean stop: while nothing was issued since a stored key raised the generator, or a key
// beyond the window still stops it, or a read is unfinished, the floor is armed again, so that
// the next start reads the keys afresh (the key may be gone by then).
void snowflake_keys_floor_rearm_at_stop(SnowflakeShared *shared);

// A mark at mark_ms is in the file now (generate.cpp says so after an id's extension): once it
// covers what the floor raised the generator through, the file that keeps the floor armed across
// restarts goes.
void snowflake_note_mark_written(SnowflakeShared *shared, int64_t mark_ms);

// The key that raised the generator ahead of the clock and where it is stored, for a refusal that
// names it.
void snowflake_describe_key_floor(const SnowflakeShared *shared, int64 *key, char *source,
                                  size_t source_size);
