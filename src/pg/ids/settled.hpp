// The settled bound (core/settled.hpp) in the server: one claim slot per backend in shared
// memory, the claim a backend's transaction makes before its first id, and its release once the
// transaction's end is visible. Include only after postgres.h.
#pragma once

#include "core/settled.hpp"
#include "pg/shared_state.hpp"

// Shared memory for the slots, requested and attached as the other shared state is.
Size snowflake_claims_memory_size();
void snowflake_attach_claims_memory();

// Registers the transaction callbacks that release the claims; once, in _PG_init.
void snowflake_register_claim_callbacks();

// The settled bound, and whether a transaction holds it below the state word.
struct SettledBound {
    int64_t bound;
    bool held;
};

// The bound for introspection: false where there is none (a standby, no shared memory). It does
// not refuse in REPEATABLE READ, since nobody reads below it there.
bool snowflake_peek_settled_bound(SettledBound *settled);

// The slot this transaction has yet to claim in before its next id, or nullptr once it has
// claimed: a parallel worker claims in its leader's slot, which the leader releases.
snowflake::ClaimSlot *snowflake_unclaimed_slot();

// Moves the generator up to the clock, within the durable mark, while nothing but the clock stops
// this server from issuing its configured pair's ids (generate.cpp, which asks the fleet guard).
void snowflake_raise_quiet_generator(SnowflakeShared *shared);
