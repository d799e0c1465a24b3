// The procedure snowflake_run_partition_maintenance() (version 1.8), the scheduled run: every
// table the caller may maintain, each in a transaction and a session of its own (table_step.hpp),
// in turns of their owners, and no owner's tables given more than a share of the run, so that
// what one role's tables cost the others is bounded however many tables she has (doc/security.md
// "A fair scheduled run").

extern "C" {
#include "postgres.h"

#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "storage/lock.h"
#include "storage/shm_mq.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
}

#include "core/partition_plan.hpp"
#include "pg/as_owner.hpp"
#include "pg/object_names.hpp"
#include "pg/partitions/partition_parts.hpp"
#include "pg/partitions/table_step.hpp"
#include "pg/settings.hpp"

extern "C" {
PG_FUNCTION_INFO_V1(snowflake_run_partition_maintenance);
}

namespace {

using namespace snowflake_partitions;

// The lock that keeps one role's runs of the procedure in this database from overlapping: an
// advisory lock that no SQL function can take (pg_locks shows it with classid the configuration
// table's OID, objid the role's and objsubid 3, where pg_advisory_lock() uses 1 and 2), so that
// no role can hold it to keep another role's scheduled runs from maintaining anything.
constexpr uint16 kRunLockKind = 3;
LOCKTAG run_lock(const Extension &extension) {
    LOCKTAG tag;
    SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, extension.config_table, GetUserId(), kRunLockKind);
    return tag;
}

// How much of the run an owner's tables have had.
struct OwnerShare {
    Oid owner;
    long used_ms;
    bool told;  // the notice that her share is used was given
};

// The share of the owner of a table, found or added; owners is sized for one per table.
OwnerShare &share_of(OwnerShare *owners, int *owner_count, Oid owner) {
    for (int i = 0; i < *owner_count; i++) {
        if (owners[i].owner == owner) {
            return owners[i];
        }
    }
    owners[*owner_count] = OwnerShare{owner, 0, false};
    return owners[(*owner_count)++];
}

// Whether an owner's tables may have more of the run; a warning says so once when not.
bool within_share(OwnerShare &share, Oid parent, const char *function_name) {
    const long share_ms = static_cast<long>(snowflake_partition_owner_share_setting) * 1000;
    if (share.used_ms < share_ms) {
        return true;
    }
    if (!share.told) {
        // Worked out before the report, whose texts the check of the client's encoding must not
        // interrupt. A role dropped since the run listed its tables is named by its OID, as is
        // one whose name the client's encoding cannot show.
        const char *table = shown_table_text(parent);
        const char *name = GetUserNameFromId(share.owner, true);
        const char *quoted = name != nullptr ? quote_identifier(name) : nullptr;
        const char *role = quoted != nullptr && client_can_show(quoted)
                               ? quoted
                               : psprintf("of OID %u", share.owner);
        ereport(WARNING,
                (errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
                 errmsg("%s left %s and the tables of role %s after it to its next run: that "
                        "role's tables had their share of this run",
                        function_name, table, role),
                 errdetail("They took %ld ms; snowflake.partition_owner_share is %d s.",
                           share.used_ms, snowflake_partition_owner_share_setting),
                 errhint("Each run takes a role's tables in the same order, so these wait until "
                         "a superuser raises snowflake.partition_owner_share: each table takes "
                         "about 0.1 s.")));
        share.told = true;
    }
    return false;
}

// Maintains the listed tables, one transaction each, and each owner's within her share. Once no
// background worker slot comes free, the rest wait for the next run.
void run_tables(const ListedTable *tables, int count, const char *function_name) {
    const MemoryContext run_memory = CurrentMemoryContext;
    auto *owners = static_cast<OwnerShare *>(palloc(sizeof(OwnerShare) * (count + 1)));
    int owner_count = 0;
    for (int i = 0; i < count; i++) {
        // This table's allocations, freed once it is committed.
        const MemoryContext table_memory = AllocSetContextCreate(
            run_memory, "snowflake table maintenance", ALLOCSET_DEFAULT_SIZES);
        MemoryContextSwitchTo(table_memory);
        // Pinned for the names in the messages; the commit ends it.
        const int guc_nest_level = pin_search_path();
        OwnerShare &share = share_of(owners, &owner_count, tables[i].owner);
        const bool started = within_share(share, tables[i].parent, function_name);
        const long cost =
            started ? run_table_step(tables[i].parent, kManyTablesTimeLimitMs, function_name) : 0;
        if (cost < 0) {
            // Worked out before the report, as in within_share().
            const char *table = shown_table_text(tables[i].parent);
            ereport(WARNING,
                    (errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
                     errmsg("%s left %d tables to its next run, from %s on: no background "
                            "worker slot was free",
                            function_name, count - i, table),
                     errhint("Each table is maintained in a background worker of its own: raise "
                             "max_worker_processes to at least max_parallel_workers plus one "
                             "plus the server's other workers, and restart.")));
        }
        share.used_ms += Max(cost, 0L);
        unpin_search_path(guc_nest_level);
        if (started) {
            SPI_commit();
        }
        MemoryContextSwitchTo(run_memory);
        MemoryContextDelete(table_memory);
        if (cost < 0) {
            return;
        }
    }
}

}  // namespace

// Maintains every table set up that the caller may maintain, each table in a session and a
// transaction of its own (table_step.hpp): her code ends no more than her table's session, the
// DETACH of one table keeps its inserts out only until that table's commit, and a table another
// session holds costs the run about a second (lock_timeout) and no other table anything
// (doc/reference.md "Scheduling").
extern "C" Datum snowflake_run_partition_maintenance(PG_FUNCTION_ARGS) {
    constexpr char kName[] = "snowflake_run_partition_maintenance()";
    const auto *call = reinterpret_cast<const CallContext *>(fcinfo->context);
    if (call == nullptr || !IsA(call, CallContext) || call->atomic) {
        ereport(ERROR,
                (errcode(ERRCODE_ACTIVE_SQL_TRANSACTION),
                 errmsg("%s commits after each table and cannot run inside a transaction block "
                        "or a function",
                        kName),
                 errhint("CALL it on its own, or use SELECT * FROM "
                         "snowflake_maintain_partitions() inside a transaction.")));
    }
    refuse_unfit_transaction(kName);
    SPI_connect_ext(SPI_OPT_NONATOMIC);
    const int guc_nest_level = pin_search_path();
    const Extension extension = find_extension();
    const LOCKTAG lock = run_lock(extension);
    if (LockAcquire(&lock, ExclusiveLock, true, true) == LOCKACQUIRE_NOT_AVAIL) {
        ereport(NOTICE,
                (errmsg("%s did nothing: another run of it by role %s is in progress in this "
                        "database",
                        kName, quote_identifier(GetUserNameFromId(GetUserId(), false))),
                 errhint("Leave the tables to that run; pg_locks shows the session that holds "
                         "its advisory lock.")));
        unpin_search_path(guc_nest_level);
        SPI_finish();
        PG_RETURN_VOID();
    }
    PG_TRY();
    {
        int count = 0;
        const ListedTable *tables = list_tables_to_maintain(extension, true, &count);
        unpin_search_path(guc_nest_level);
        SPI_commit();
        run_tables(tables, count, kName);
    }
    PG_CATCH();
    {
        // A session lock outlives the transaction's abort: released here, or no later run of
        // this role would start while the session lasts.
        LockRelease(&lock, ExclusiveLock, true);
        PG_RE_THROW();
    }
    PG_END_TRY();
    LockRelease(&lock, ExclusiveLock, true);
    SPI_finish();
    PG_RETURN_VOID();
}
