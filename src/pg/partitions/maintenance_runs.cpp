// snowflake_maintain_partitions() (version 1.7) and the procedure
// snowflake_run_partition_maintenance() (version 1.8): the maintenance of one named table, or of
// every table the caller may maintain, each of those in a subtransaction of its own with a time
// limit, so that no owner's table stops the maintenance of the others.

extern "C" {
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "storage/lock.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/resowner.h"
#include "utils/syscache.h"
#include "utils/tuplestore.h"
}

#include "core/partition_plan.hpp"
#include "pg/as_owner.hpp"
#include "pg/compat.hpp"
#include "pg/object_names.hpp"
#include "pg/partitions/partition_parts.hpp"
#include "pg/partitions/partition_setups.hpp"
#include "pg/partitions/table_time_limit.hpp"

extern "C" {
PG_FUNCTION_INFO_V1(snowflake_maintain_partitions);
PG_FUNCTION_INFO_V1(snowflake_run_partition_maintenance);
}

namespace {

using namespace snowflake_partitions;

// One named table: its lock awaited, an error the caller's.
void maintain_named_table(const Report &report, const Extension &extension, Oid parent,
                          const char *function_name) {
    lock_parent(parent, function_name, true);
    Setup setup;
    if (!read_setup(extension, parent, &setup)) {
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("%s is not set up for time partitions", table_text(parent)),
                        errhint("Set it up first: SELECT * FROM snowflake_partition_table(%s, "
                                "'1 month').",
                                quote_literal_cstr(table_text(parent)))));
    }
    maintain_table(report, extension, setup, false);
}

// How long maintenance of every table waits for a lock of one of them.
constexpr char kManyTablesLockTimeout[] = "1s";

// How long maintenance of every table gives one of them (table_time_limit.hpp).
constexpr int kManyTablesTimeLimitMs = 10000;

// One of every table set up, in a subtransaction of its own: a table another session holds is
// left for the next call rather than awaited (the call may hold locks on tables it has
// maintained), and a table whose maintenance fails is reported, with a warning, and rolled back
// alone, so that no owner's table stops the maintenance of the others; a cancel ends the call.
void maintain_one_of_many(const Report &report, const Extension &extension, Oid parent,
                          const char *function_name) {
    const MemoryContext context = CurrentMemoryContext;
    const ResourceOwner owner = CurrentResourceOwner;
    // This table's rows, kept apart until its subtransaction commits.
    const Report table_report{tuplestore_begin_heap(false, false, work_mem), report.tupdesc,
                              report.function_name};
    // A cancel that came after the table before ends the call here, not in this table's step.
    CHECK_FOR_INTERRUPTS();
    BeginInternalSubTransaction(nullptr);
    MemoryContextSwitchTo(context);
    volatile bool maintained = false;
    volatile bool cancelled = false;
    // Ended once on whichever path leaves the table: its starts and ends nest.
    volatile bool limit_running = true;
    start_table_time_limit(kManyTablesTimeLimitMs);
    PG_TRY();
    {
        // A lock this table's steps wait for (a partition's, or the parent's for a DETACH, which
        // waits for its inserts) is awaited for a second at most: the DETACH of an earlier table
        // keeps that table's inserts out until the transaction ends.
        const int guc_nest_level = NewGUCNestLevel();
        (void)set_config_option("lock_timeout", kManyTablesLockTimeout, PGC_USERSET, PGC_S_SESSION,
                                GUC_ACTION_SAVE, true, 0, false);
        Setup setup;
        // A table dropped since the tables were listed has nothing left to maintain.
        const bool exists = SearchSysCacheExists1(RELOID, ObjectIdGetDatum(parent));
        if (exists && !lock_parent(parent, function_name, false)) {
            add_row(table_report, parent, nullptr, "skipped: locked by another session");
        } else if (exists && read_setup(extension, parent, &setup)) {
            maintain_table(table_report, extension, setup, false);
        }
        AtEOXact_GUC(false, guc_nest_level);
        // A cancel still pending (a lock timeout's) is this table's, and fails it here.
        CHECK_FOR_INTERRUPTS();
        // Her code caught the limit's cancel and went on: the table ran past its limit all the
        // same. A cancel of the caller's that her code caught too ends the call below instead.
        if (cancel_cause() == CancelCause::kTimeLimit) {
            ereport(ERROR,
                    (errcode(ERRCODE_QUERY_CANCELED),
                     errmsg("the maintenance of %s ran past its time limit", table_text(parent)),
                     errhint("Call snowflake_maintain_partitions() on that table alone, which has "
                             "no time limit.")));
        }
        limit_running = false;
        cancelled = end_table_time_limit();
        ReleaseCurrentSubTransaction();
        maintained = true;
    }
    PG_CATCH();
    {
        if (limit_running) {
            (void)end_table_time_limit();
        }
        MemoryContextSwitchTo(context);
        ErrorData *error = CopyErrorData();
        FlushErrorState();
        RollbackAndReleaseCurrentSubTransaction();
        MemoryContextSwitchTo(context);
        CurrentResourceOwner = owner;
        // A cancel or statement_timeout is the caller's, not this table's: it ends the call. The
        // owner's code cannot end the maintenance of the tables after hers by raising
        // query_canceled itself, nor by running past the limit.
        const CancelCause cause = cancel_cause();
        if (cause == CancelCause::kSignal && error->sqlerrcode == ERRCODE_QUERY_CANCELED) {
            ReThrowError(error);
        }
        // Another error after a cancel of the caller's that her code caught is her table's, and
        // the call ends once it is reported.
        cancelled = cause == CancelCause::kSignal;
        const bool over_time =
            error->sqlerrcode == ERRCODE_QUERY_CANCELED && cause == CancelCause::kTimeLimit;
        if (over_time) {
            error->message = psprintf(
                "took longer than %d s, the limit of one table in the maintenance of every table",
                kManyTablesTimeLimitMs / 1000);
        }
        // A table dropped since the tables were listed has nothing left to maintain.
        const bool dropped = error->sqlerrcode == ERRCODE_UNDEFINED_TABLE &&
                             !SearchSysCacheExists1(RELOID, ObjectIdGetDatum(parent));
        if (!dropped) {
            ereport(WARNING,
                    (errcode(error->sqlerrcode),
                     errmsg("time partitions of %s were not maintained: %s", table_text(parent),
                            error->message),
                     cancelled ? errhint("A cancel of the call came meanwhile: the call ends here.")
                               : errhint("Call snowflake_maintain_partitions(%s) to see the whole "
                                         "error (it maintains that table alone, without a time "
                                         "limit); the other tables were maintained.",
                                         quote_literal_cstr(table_text(parent)))));
            add_row(report, parent, nullptr, psprintf("failed: %s", error->message));
        }
        FreeErrorData(error);
    }
    PG_END_TRY();
    // A cancel of the caller's that her code caught ends the call once her table is done with.
    if (cancelled) {
        ereport(ERROR,
                (errcode(ERRCODE_QUERY_CANCELED),
                 errmsg("canceling the maintenance of every table: a cancel came while %s was "
                        "maintained, and its owner's code caught it",
                        table_text(parent)),
                 errhint("The tables after it were not maintained. Call it again when it should "
                         "run.")));
    }
    // Its rows join the report once its subtransaction is committed, outside the catch, which
    // could not undo a subtransaction that is no longer open.
    if (maintained) {
        MemoryContextSwitchTo(context);
        CurrentResourceOwner = owner;
        TupleTableSlot *slot = MakeSingleTupleTableSlot(report.tupdesc, &TTSOpsMinimalTuple);
        while (tuplestore_gettupleslot(table_report.store, true, false, slot)) {
            tuplestore_puttupleslot(report.store, slot);
        }
        ExecDropSingleTupleTableSlot(slot);
    }
    tuplestore_end(table_report.store);
}

// Every table set up whose owner's privileges the caller has, in OID order; first the rows whose
// table is gone are removed, which the event trigger misses where event triggers do not fire
// (single-user mode, event_triggers off, a temporary table dropped as its session ends).
Oid *list_tables_to_maintain(const Extension &extension, int *count) {
    remove_setups(extension.config_table, InvalidOid);
    if (SPI_execute(psprintf("SELECT t.parent::pg_catalog.oid FROM %s AS t JOIN "
                             "pg_catalog.pg_class AS c ON c.oid OPERATOR(pg_catalog.=) "
                             "t.parent::pg_catalog.oid WHERE pg_catalog.pg_has_role(c.relowner, "
                             "'USAGE') AND c.relpersistence OPERATOR(pg_catalog.<>) 't' ORDER BY 1",
                             extension.config_table_text),
                    true, 0) != SPI_OK_SELECT) {
        elog(ERROR, "snowflake: could not read snowflake_partitioned_tables");
    }
    *count = static_cast<int>(SPI_processed);
    auto *parents = static_cast<Oid *>(palloc(sizeof(Oid) * (*count + 1)));
    for (int i = 0; i < *count; i++) {
        bool is_null = true;
        parents[i] = DatumGetObjectId(
            SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &is_null));
    }
    return parents;
}

}  // namespace

// Brings one table, or every table set up that the caller may maintain, up to its setup.
extern "C" Datum snowflake_maintain_partitions(PG_FUNCTION_ARGS) {
    using namespace snowflake_partitions;
    constexpr char kName[] = "snowflake_maintain_partitions()";
    refuse_unfit_transaction(kName);
    const Report report = open_report(fcinfo, kName);
    const int guc_nest_level = pin_search_path();
    SPI_connect();
    const Extension extension = find_extension();
    Oid *parents = nullptr;
    int parent_count = 0;
    if (!PG_ARGISNULL(0)) {
        parents = static_cast<Oid *>(palloc(sizeof(Oid)));
        parents[0] = PG_GETARG_OID(0);
        parent_count = 1;
    } else {
        parents = list_tables_to_maintain(extension, &parent_count);
    }
    if (!PG_ARGISNULL(0)) {
        maintain_named_table(report, extension, parents[0], kName);
    }
    for (int i = 0; PG_ARGISNULL(0) && i < parent_count; i++) {
        maintain_one_of_many(report, extension, parents[i], kName);
    }
    SPI_finish();
    unpin_search_path(guc_nest_level);
    return static_cast<Datum>(0);
}

namespace {

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

// The report's row as a notice, since a procedure returns no rows.
void notify_row(TupleTableSlot *slot) {
    slot_getallattrs(slot);
    const char *parent = table_text(DatumGetObjectId(slot->tts_values[0]));
    const char *action = TextDatumGetCString(slot->tts_values[2]);
    if (slot->tts_isnull[1]) {
        ereport(NOTICE, (errmsg("%s: %s", parent, action)));
    } else {
        ereport(NOTICE,
                (errmsg("%s: %s %s", parent, action, TextDatumGetCString(slot->tts_values[1]))));
    }
}

// The report's columns, as snowflake_maintain_partitions() returns them.
TupleDesc report_columns() {
    TupleDesc columns = CreateTemplateTupleDesc(3);
    TupleDescInitEntry(columns, 1, "parent", REGCLASSOID, -1, 0);
    TupleDescInitEntry(columns, 2, "partition", TEXTOID, -1, 0);
    TupleDescInitEntry(columns, 3, "action", TEXTOID, -1, 0);
    snowflake_finalize_tuple_desc(columns);
    return columns;
}

}  // namespace

// Maintains every table set up that the caller may maintain, each table in a transaction of its
// own, as snowflake_maintain_partitions() maintains one of many: the DETACH of one table keeps its
// inserts out only until that table's commit, and a table another session holds costs the run
// about a second (lock_timeout) and no other table anything (doc/reference.md "Scheduling").
extern "C" Datum snowflake_run_partition_maintenance(PG_FUNCTION_ARGS) {
    using namespace snowflake_partitions;
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
    // Pinned for this first transaction's reads, and again in each table's: a commit ends it.
    int guc_nest_level = pin_search_path();
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
    const TupleDesc columns = report_columns();
    const MemoryContext run_memory = CurrentMemoryContext;
    PG_TRY();
    {
        int parent_count = 0;
        const Oid *parents = list_tables_to_maintain(extension, &parent_count);
        unpin_search_path(guc_nest_level);
        SPI_commit();
        for (int i = 0; i < parent_count; i++) {
            // This table's allocations, freed once it is committed.
            const MemoryContext table_memory = AllocSetContextCreate(
                run_memory, "snowflake table maintenance", ALLOCSET_DEFAULT_SIZES);
            MemoryContextSwitchTo(table_memory);
            guc_nest_level = pin_search_path();
            const Report report{tuplestore_begin_heap(false, false, work_mem), columns, kName};
            maintain_one_of_many(report, extension, parents[i], kName);
            TupleTableSlot *slot = MakeSingleTupleTableSlot(columns, &TTSOpsMinimalTuple);
            while (tuplestore_gettupleslot(report.store, true, false, slot)) {
                notify_row(slot);
            }
            ExecDropSingleTupleTableSlot(slot);
            tuplestore_end(report.store);
            unpin_search_path(guc_nest_level);
            SPI_commit();
            MemoryContextSwitchTo(run_memory);
            MemoryContextDelete(table_memory);
        }
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
