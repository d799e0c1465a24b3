// The settled bound in the server: the claim slots in shared memory, the claims of a backend's
// transactions, and snowflake_settled_bound(). Why no reader sees a bound above an unsettled id is
// argued in core/settled.hpp.
//
// Concurrency. Slot i belongs to the backend whose PGPROC has index i: it alone claims and
// releases in it, but for its parallel workers, which claim in it (an atomic minimum) while the
// leader's transaction runs and never release it. A prepared transaction's claim moves into an
// entry of its own before the backend's slot is released (settled_prepared.cpp). Readers load
// the state word, then the slots, then the entries. No lock is taken.

#include <algorithm>
#include <new>

extern "C" {
#include "postgres.h"

#include "access/parallel.h"
#include "access/twophase.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "miscadmin.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "utils/resowner.h"
}

#include "core/mark_rules.hpp"
#include "pg/compat.hpp"
#include "pg/settled/settled.hpp"
#include "pg/settled/settled_parts.hpp"
#include "pg/shared_state.hpp"

namespace {

// Whether this transaction (or this parallel worker's part of it) has claimed.
bool claimed = false;

// Every PGPROC of a backend or a background worker has an index below MaxBackends.
uint32_t slot_count() {
    return static_cast<uint32_t>(MaxBackends);
}

// Room for every prepared transaction, and as many again for those a start finds in files while
// new ones are prepared.
uint32_t prepared_count() {
    return static_cast<uint32_t>(max_prepared_xacts) * 2;
}

// The slots' part of the memory, which the entries follow.
Size slots_size() {
    return add_size(offsetof(ClaimsShared, slots),
                    mul_size(slot_count(), sizeof(snowflake::ClaimSlot)));
}

// The slot of a PGPROC index, or nullptr for a process that has none.
snowflake::ClaimSlot *slot_of(int proc_number) {
    if (snowflake_claims == nullptr || proc_number < 0 ||
        static_cast<uint32_t>(proc_number) >= snowflake_claims->slot_count) {
        return nullptr;
    }
    return &snowflake_claims->slots[proc_number];
}

// The slot a call of this process claims in: its own, or its leader's in a parallel worker.
snowflake::ClaimSlot *own_slot() {
    if (IsParallelWorker() && MyProc != nullptr && MyProc->lockGroupLeader != nullptr) {
        return slot_of(snowflake_proc_number_of(MyProc->lockGroupLeader));
    }
    return slot_of(snowflake_own_proc_number());
}

// Ends this backend's claim, if its slot holds one: the slot's value, not the flag, says so,
// since a parallel worker may have claimed in it for a leader that drew no id itself.
void release_own_claim() {
    snowflake::ClaimSlot *slot = own_slot();
    if (slot != nullptr && snowflake::claim_of(*slot) != snowflake::kClaimsNothing) {
        snowflake::release_claim(*slot);
    }
    claimed = false;
}

// A claim ends only once its transaction's end is visible to every new snapshot, which
// PostgreSQL has made so before it calls these events. A commit's claim ends later, in
// release_after_commit_callbacks(). A parallel worker never releases: its part ends while its
// leader's transaction goes on, and the short transactions it runs while it starts end in
// COMMIT events of their own, with the leader's slot already its own_slot().
void release_at_end(XactEvent event, void *) {
    if (IsParallelWorker()) {
        if (event == XACT_EVENT_PARALLEL_COMMIT || event == XACT_EVENT_PARALLEL_ABORT) {
            claimed = false;
        }
        return;
    }
    if (event == XACT_EVENT_ABORT) {
        release_own_claim();
    } else if (event == XACT_EVENT_PRE_PREPARE && max_prepared_xacts > 0) {
        // Without prepared transactions, the PREPARE fails after this with PostgreSQL's own
        // error, which says what to set.
        snowflake::ClaimSlot *slot = own_slot();
        if (slot != nullptr && snowflake::claim_of(*slot) != snowflake::kClaimsNothing) {
            snowflake_keep_claim_for_prepare(snowflake::claim_of(*slot));
        }
    }
}

// A commit's or a prepare's claim ends after every transaction callback has run: another
// extension's commit callback may make the transaction's rows visible elsewhere first, as Citus
// commits the workers' prepared transactions after the coordinator's own commit. The top-level
// resource owner is released after those callbacks.
void release_after_commit_callbacks(ResourceReleasePhase phase, bool is_commit, bool is_top_level,
                                    void *) {
    // Only at a transaction's end: a top-level owner released while a transaction runs (as a
    // walsender or an auxiliary process may) ends nothing.
    if (phase == RESOURCE_RELEASE_AFTER_LOCKS && is_top_level && !IsParallelWorker() &&
        !IsTransactionState()) {
        release_own_claim();
    }
}

// Used where a reader's snapshot was taken before the bound: rows committed below it after the
// snapshot would be skipped.
void refuse_in_transaction_snapshot() {
    if (!IsolationUsesXactSnapshot()) {
        return;
    }
    ereport(ERROR,
            (errcode(ERRCODE_ACTIVE_SQL_TRANSACTION),
             errmsg("snowflake_settled_bound() cannot be used in a REPEATABLE READ or "
                    "SERIALIZABLE transaction"),
             errdetail("The transaction's snapshot was taken before the bound: rows committed "
                       "below the bound after it are not in the snapshot, and a reader would skip "
                       "them."),
             errhint("Call it in a READ COMMITTED transaction, in a statement of its own, and "
                     "read below it in the next statement.")));
}

// On a standby the primary's transactions that hold ids are unknown.
void refuse_during_recovery() {
    if (!RecoveryInProgress()) {
        return;
    }
    ereport(ERROR,
            (errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
             errmsg("snowflake_settled_bound() cannot be used on a standby"),
             errdetail("The transactions that hold ids run on the primary, which the standby does "
                       "not see."),
             errhint("Call snowflake_settled_bound_lsn() on the primary, wait until the standby "
                     "has replayed past its lsn, then read below its bound on the standby.")));
}

// The bound over every claim: the state word, the backends' slots, then the prepared entries;
// then the mark, loaded last. A raise of the generator stays in memory (the floor from stored
// keys, replay without a file), so the bound never passes what the mark covers: a restart starts
// above the mark, and so above every bound a reader was given.
SettledBound compute_bound() {
    const uint64_t word = snowflake_shared->generator.after_last_id.load(std::memory_order_acquire);
    // Slots before entries, in statements of their own: a PREPARE moves its claim into an entry
    // before it releases its slot, so a reader that finds the slot released finds the entry.
    const uint64_t in_slots = snowflake::settled_bound(
        snowflake_shared->generator, snowflake_claims->slots, snowflake_claims->slot_count);
    const uint64_t in_entries = snowflake_prepared_claims_bound();
    const uint64_t lowest = std::min({word, in_slots, in_entries});
    const int64_t bound = snowflake::covered_bound(
        lowest, snowflake_shared->durable_mark_ms.load(std::memory_order_acquire));
    // Held back by a transaction or by the mark: either is a lag that readers see.
    return {bound, static_cast<uint64_t>(bound) < word};
}

}  // namespace

ClaimsShared *snowflake_claims = nullptr;

void snowflake_require_claims_memory() {
    if (snowflake_shared == nullptr || snowflake_claims == nullptr) {
        snowflake_report_not_preloaded(
            "The claims of the transactions that hold ids are kept in shared memory.");
    }
}

Size snowflake_claims_memory_size() {
    return add_size(slots_size(), mul_size(prepared_count(), sizeof(PreparedClaim)));
}

PreparedClaim *snowflake_prepared_claims(ClaimsShared *claims) {
    return reinterpret_cast<PreparedClaim *>(reinterpret_cast<char *>(claims) + slots_size());
}

void snowflake_attach_claims_memory() {
    bool found = false;
    void *memory = ShmemInitStruct("snowflake claims", snowflake_claims_memory_size(), &found);
    snowflake_claims = static_cast<ClaimsShared *>(memory);
    if (!found) {
        new (memory) ClaimsShared();
        snowflake_claims->files_lock = &GetNamedLWLockTranche("snowflake")[1].lock;
        snowflake_claims->slot_count = slot_count();
        snowflake_claims->prepared_count = prepared_count();
        for (uint32_t i = 0; i < snowflake_claims->slot_count; i++) {
            new (&snowflake_claims->slots[i]) snowflake::ClaimSlot();
        }
        PreparedClaim *prepared = snowflake_prepared_claims(snowflake_claims);
        for (uint32_t i = 0; i < snowflake_claims->prepared_count; i++) {
            new (&prepared[i]) PreparedClaim();
        }
    }
}

void snowflake_register_claim_callbacks() {
    RegisterXactCallback(release_at_end, nullptr);
    RegisterResourceReleaseCallback(release_after_commit_callbacks, nullptr);
}

bool snowflake_peek_settled_bound(SettledBound *settled) {
    if (snowflake_shared == nullptr || snowflake_claims == nullptr || RecoveryInProgress()) {
        return false;
    }
    *settled = compute_bound();
    return true;
}

snowflake::ClaimSlot *snowflake_unclaimed_slot() {
    if (claimed) {
        return nullptr;
    }
    snowflake::ClaimSlot *slot = own_slot();
    if (slot == nullptr) {
        ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR),
                        errmsg("this process has no claim slot for the Snowflake ids it draws"),
                        errdetail("Every backend and background worker has one; an auxiliary "
                                  "process has none."),
                        errhint("Draw ids from a backend or a background worker.")));
    }
    claimed = true;
    return slot;
}

void snowflake_check_bound_reader() {
    snowflake_require_claims_memory();
    refuse_during_recovery();
    refuse_in_transaction_snapshot();
}

int64_t snowflake_reader_bound() {
    return compute_bound().bound;
}
