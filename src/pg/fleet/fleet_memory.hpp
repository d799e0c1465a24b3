// The fleet guard's shared memory and this start's instance token (fleet_memory.cpp). Include
// only after postgres.h: it is part of the glue.
#pragma once

#include <cstdint>

extern "C" {
#include "postgres.h"
}

// Shared memory of the guard's results, requested and attached with the rest (module.cpp).
Size snowflake_fleet_memory_size();
void snowflake_request_fleet_lock();
// Creates the results and this start's instance token, in the postmaster.
void snowflake_attach_fleet_memory();

// snowflake.instance_token, read-only: the token of the running server, from shared memory.
const char *snowflake_show_instance_token();

// The token itself, for recognising this server among the answers; 0 (which no start draws)
// where the library is not preloaded.
uint64_t snowflake_own_instance_token();
