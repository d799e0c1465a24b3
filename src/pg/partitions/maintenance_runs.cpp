// snowflake_maintain_partitions() (version 1.7): the maintenance of one named table, or of every
// table the caller may maintain, each of those in a subtransaction of its own with a time limit,
// so that no owner's table stops the maintenance of the others. The scheduled run is
// scheduled_run.cpp.

extern "C" {
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
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

}  // namespace

// Every table set up whose owner's privileges the caller has (partition_parts.hpp); first the rows
// whose table is gone are removed, which the event trigger misses where event triggers do not
// fire (single-user mode, event_triggers off, a temporary table dropped as its session ends).
ListedTable *snowflake_partitions::list_tables_to_maintain(const Extension &extension,
                                                           bool in_turns, int *count) {
    remove_setups(extension.config_table, InvalidOid);
    // In turns: each owner's first table, then each owner's second, and so on, each owner's in
    // OID order. Nothing of a table but its catalog row decides: no owner can make the listing
    // slow or fail.
    const char *order = in_turns ? "pg_catalog.row_number() OVER (PARTITION BY c.relowner ORDER "
                                   "BY c.oid), c.relowner"
                                 : "c.oid";
    if (SPI_execute(psprintf("SELECT c.oid, c.relowner FROM %s AS t JOIN pg_catalog.pg_class AS c "
                             "ON c.oid OPERATOR(pg_catalog.=) t.parent::pg_catalog.oid WHERE "
                             "pg_catalog.pg_has_role(c.relowner, 'USAGE') AND c.relpersistence "
                             "OPERATOR(pg_catalog.<>) 't' ORDER BY %s",
                             extension.config_table_text, order),
                    true, 0) != SPI_OK_SELECT) {
        elog(ERROR, "snowflake: could not read snowflake_partitioned_tables");
    }
    *count = static_cast<int>(SPI_processed);
    auto *tables = static_cast<ListedTable *>(palloc(sizeof(ListedTable) * (*count + 1)));
    for (int i = 0; i < *count; i++) {
        bool is_null = true;
        tables[i].parent = DatumGetObjectId(
            SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &is_null));
        tables[i].owner = DatumGetObjectId(
            SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2, &is_null));
    }
    return tables;
}

// Brings one table, or every table set up that the caller may maintain, up to its setup.
extern "C" Datum snowflake_maintain_partitions(PG_FUNCTION_ARGS) {
    using namespace snowflake_partitions;
    constexpr char kName[] = "snowflake_maintain_partitions()";
    refuse_unfit_transaction(kName);
    const Report report = open_report(fcinfo, kName);
    const int guc_nest_level = pin_search_path();
    SPI_connect();
    const Extension extension = find_extension();
    if (!PG_ARGISNULL(0)) {
        maintain_named_table(report, extension, PG_GETARG_OID(0), kName);
    } else {
        int count = 0;
        const ListedTable *tables = list_tables_to_maintain(extension, false, &count);
        for (int i = 0; i < count; i++) {
            maintain_one_of_many(report, extension, tables[i].parent, kName);
        }
    }
    SPI_finish();
    unpin_search_path(guc_nest_level);
    return static_cast<Datum>(0);
}
