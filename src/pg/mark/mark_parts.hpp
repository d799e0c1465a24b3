// What the files of the mark's room share, and no other room may call: the adoption of a mark read
// from the file at start-up, which moves the shared values behind the mark without a write.
// Include only after postgres.h.
#pragma once

#include <cstdint>

#include "pg/shared_state.hpp"

// Adopts the mark read at start-up (mark_restore.cpp) as the generator's floor, the highest mark
// known and the issue limit, for the ids of a node pair (-1: none).
void snowflake_adopt_restored_mark(SnowflakeShared *shared, int64_t mark_unix_ms,
                                   int64_t node_bits);
