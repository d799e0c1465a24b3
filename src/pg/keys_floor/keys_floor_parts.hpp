// What the two parts of the floor from stored keys ask of each other: the gate a backend passes
// before its first id (keys_floor.cpp) and the background workers that read the keys
// (keys_readers.cpp, and database_reader.cpp for one database). Include only after postgres.h.
#pragma once

#include <cstdint>

#include "pg/shared_state.hpp"

// KeysFloorState::read_node_bits for a read while a node id was unset, which reads nothing: the
// first call with both set reads again.
inline constexpr int64_t kUnsetNodeBits = -2;
// KeysFloorState::pair_requested while no call asked for a pair.
inline constexpr int64_t kNoPairRequested = -1;

// How long the reader waits before it reads a database again whose read failed, or tries again
// to start a database reader when no background worker slot was free.
inline constexpr long kRetryMs = 5000;

// The file that keeps the floor armed across restarts until one read of every database has ended
// with nothing beyond the window: created, fsynced and logged if that fails; or removed.
void snowflake_keep_keys_unchecked();
void snowflake_forget_keys_unchecked();

// Whether a read since the start was for this pair; and the record that one was, or no longer
// counts.
bool snowflake_pair_was_read(const KeysFloorState &floor, int64_t node_bits);
void snowflake_note_pair_read(KeysFloorState &floor, int64_t node_bits, bool read);

// Records why the read of a database failed (or, with an empty text, that none has now), and
// wakes the waiting calls so that they can say so (keys_readers.cpp).
void snowflake_record_read_failure(KeysFloorState &floor, const char *failure);

// Asks the postmaster to start the reader, unless one runs or was asked for; an error says that
// no background worker slot was free.
void snowflake_request_keys_reader(SnowflakeShared *shared);

// What to do about a key beyond snowflake.key_floor_max_lead, for every message that names one:
// first the question the operator can answer and the steps that cannot repeat an id, then the
// release, for keys known to be foreign. In the current memory context.
const char *snowflake_beyond_key_advice(int64_t key, int64_t now_unix_ms);
