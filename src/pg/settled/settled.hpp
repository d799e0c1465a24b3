// The door of the settled bound's room (src/pg/settled/): the bound of core/settled.hpp in the
// server. One claim slot per backend in shared memory, the claim a backend's transaction makes
// before its first id, its release once the transaction's end is visible, the claims of prepared
// transactions (settled_prepared.cpp) and the list of holders (settled_holders.cpp). The SQL
// functions that give a reader the bound are generation's (generation/bound_functions.cpp), since
// they move a quiet generator first. Include only after postgres.h.
#pragma once

#include "access/xlogreader.h"
#include "lib/stringinfo.h"

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

// Refuses a reader where the bound cannot be used safely: without the preloaded library, on a
// standby, and in a transaction whose snapshot predates the bound.
void snowflake_check_bound_reader();

// The bound a reader may be given now: the lowest of the state word and every claim, never above
// what the durable mark covers (core/mark_rules.hpp).
int64_t snowflake_reader_bound();

// Replay of a prepared transaction's claim writes its file, which a promoted standby reads
// (wal/resource_manager.cpp dispatches to it).
void snowflake_redo_claim(XLogReaderState *record);
void snowflake_describe_claim(StringInfo buf, XLogReaderState *record);
