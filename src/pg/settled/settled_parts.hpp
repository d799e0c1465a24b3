// What settled.cpp and settled_prepared.cpp share: the claims' shared memory. Include only after
// postgres.h.
#pragma once

#include <atomic>
#include <cstdint>

#include "access/xlogreader.h"
#include "lib/stringinfo.h"
#include "storage/lwlock.h"

#include "core/settled.hpp"

// A prepared transaction's claim, kept from its PREPARE until its COMMIT PREPARED or ROLLBACK
// PREPARED (which no callback reports: an entry whose transaction is no longer in progress is
// released by the next bound). xid is 0 while the entry is free.
struct PreparedClaim {
    std::atomic<uint32_t> xid{0};
    snowflake::ClaimSlot claim;
};

// One slot per backend, by PGPROC index, then prepared_count entries.
struct ClaimsShared {
    uint32_t slot_count = 0;
    uint32_t prepared_count = 0;
    // Whether the files of the prepared transactions' claims were read since the start, and the
    // lock of the first bound that reads them.
    std::atomic<bool> files_read{false};
    LWLock *files_lock = nullptr;
    snowflake::ClaimSlot slots[FLEXIBLE_ARRAY_MEMBER];
};

extern ClaimsShared *snowflake_claims;

// Refuses, with the line to add, where the library was not preloaded and there are no claims.
void snowflake_require_claims_memory();

// The entries after the slots.
PreparedClaim *snowflake_prepared_claims(ClaimsShared *claims);

// At PREPARE, before the backend's claim goes: its claim is kept under the transaction's xid, in
// shared memory, a file and a WAL record, so that a restart, a crash or a failover keeps it.
void snowflake_keep_claim_for_prepare(uint64_t lowest);

// Frees the entries, and removes the files, of prepared transactions that have ended.
void snowflake_release_ended_prepared_claims();

// Reads the files of the prepared transactions' claims into their entries, the first time after a
// start; a bound and the list of holders both need them.
void snowflake_load_prepared_claims();

// The lowest claim of a prepared transaction still in progress; reads the files the first time
// after a start, and releases the entries of transactions that ended.
uint64_t snowflake_prepared_claims_bound();

