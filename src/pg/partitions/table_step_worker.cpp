// The worker of one table's step in a scheduled run (table_step.hpp describes the processes and
// their shared segment): it connects as the caller, maintains the table as the run would have,
// and sends what it did, or its error, to the run as notices and warnings.

extern "C" {
#include "postgres.h"

#include "access/xact.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "libpq/pqmq.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/dsm.h"
#include "storage/ipc.h"
#include "storage/proc.h"
#include "storage/shm_mq.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/tuplestore.h"

PGDLLEXPORT void snowflake_partition_step_main(Datum);
}

#include "core/partition_plan.hpp"
#include "pg/as_owner.hpp"
#include "pg/compat.hpp"
#include "pg/object_names.hpp"
#include "pg/partitions/partition_parts.hpp"
#include "pg/partitions/table_step.hpp"

namespace {

using namespace snowflake_partitions;

// The settings that a role's or a database's defaults could turn against the step: a transaction
// that cannot write (transaction_timeout is set back below; the run keeps the time limit). A lock
// that another session holds is awaited for a second at most, as in the maintenance of every
// table. They are set as a session's SET would be, so that the owner's code may still set them as
// it could in the caller's session.
constexpr const char *kStepSettings[][2] = {
    {"lock_timeout", kManyTablesLockTimeout},
    {"default_transaction_isolation", "read committed"},
    {"default_transaction_read_only", "off"},
    {"default_transaction_deferrable", "off"},
};

// The committed step's report, as the run's notices.
void notify_report(const char *parent, const Report &report) {
    TupleTableSlot *slot = MakeSingleTupleTableSlot(report.tupdesc, &TTSOpsMinimalTuple);
    while (tuplestore_gettupleslot(report.store, true, false, slot)) {
        slot_getallattrs(slot);
        const char *action = TextDatumGetCString(slot->tts_values[2]);
        if (slot->tts_isnull[1]) {
            ereport(NOTICE, (errmsg("%s: %s", parent, action)));
        } else {
            ereport(NOTICE, (errmsg("%s: %s %s", parent, action,
                                    TextDatumGetCString(slot->tts_values[1]))));
        }
    }
    ExecDropSingleTupleTableSlot(slot);
}

// The table's maintenance, in the worker's one transaction: the same steps as for one of many
// tables in the caller's session (maintenance_runs.cpp), a table another session holds left for
// the next run.
void maintain_in_worker(const Report &report, Oid parent, const char *parent_text) {
    pgstat_report_activity(STATE_RUNNING, psprintf("maintaining the time partitions of %s for "
                                                   "snowflake_run_partition_maintenance()",
                                                   parent_text));
    SPI_connect();
    const Extension extension = find_extension();
    Setup setup;
    if (!lock_parent(parent, report.function_name, false)) {
        add_row(report, parent, nullptr, "skipped: locked by another session");
    } else if (read_setup(extension, parent, &setup)) {
        maintain_table(report, extension, setup, false);
    }
    SPI_finish();
}

}  // namespace

// The worker: connected as the run's session user with the run's current user, so that it may do
// exactly what the run may. Whatever it reports goes to the run, an error that ends it too.
void snowflake_partition_step_main(Datum main_arg) {
    pqsignal(SIGTERM, die);
    BackgroundWorkerUnblockSignals();
    dsm_segment *segment = dsm_attach(DatumGetUInt32(main_arg));
    // The run ended before the worker started: nothing to do.
    if (segment == nullptr) {
        proc_exit(0);
    }
    auto *step = static_cast<TableStep *>(dsm_segment_address(segment));
    shm_mq *queue = step_queue(step);
    shm_mq_set_sender(queue, MyProc);
    pq_redirect_to_shm_mq(segment, shm_mq_attach(queue, segment, nullptr));
    BackgroundWorkerInitializeConnectionByOid(step->database, step->session_user,
                                              kSnowflakeCallerWorkerFlags);
    SetUserIdAndSecContext(step->current_user, step->security_context);
    SetConfigOption("client_min_messages", step->client_min_messages, PGC_SUSET, PGC_S_SESSION);
    // The run reads the messages in the database's encoding and converts them for its client, as
    // a parallel worker's leader does.
    SetClientEncoding(GetDatabaseEncoding());
    for (const auto &setting : kStepSettings) {
        SetConfigOption(setting[0], setting[1], PGC_SUSET, PGC_S_SESSION);
    }
    snowflake_reset_transaction_timeout(PGC_S_SESSION);
    SetCurrentStatementStartTimestamp();
    StartTransactionCommand();
    // A table dropped since the run listed it has nothing left to maintain.
    if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(step->parent))) {
        CommitTransactionCommand();
        step->done = true;
        proc_exit(0);
    }
    // The report outlives the transaction, which commits before it is sent.
    const MemoryContext step_memory =
        AllocSetContextCreate(TopMemoryContext, "snowflake partition step", ALLOCSET_DEFAULT_SIZES);
    MemoryContextSwitchTo(step_memory);
    const Report report{tuplestore_begin_heap(false, false, work_mem), report_columns(),
                        "snowflake_run_partition_maintenance()"};
    // Names in statements and notices are then always qualified.
    (void)pin_search_path();
    const char *parent_text = table_text(step->parent);
    PG_TRY();
    {
        PushActiveSnapshot(GetTransactionSnapshot());
        maintain_in_worker(report, step->parent, parent_text);
        PopActiveSnapshot();
        CommitTransactionCommand();
        // Written before the notices: the step is done once committed, whatever ends the worker.
        pg_write_barrier();
        step->done = true;
        MemoryContextSwitchTo(step_memory);
        notify_report(parent_text, report);
    }
    PG_CATCH();
    {
        MemoryContextSwitchTo(step_memory);
        ErrorData *error = CopyErrorData();
        FlushErrorState();
        AbortCurrentTransaction();
        // A table dropped meanwhile has nothing left to maintain.
        StartTransactionCommand();
        if (error->sqlerrcode != ERRCODE_UNDEFINED_TABLE ||
            SearchSysCacheExists1(RELOID, ObjectIdGetDatum(step->parent))) {
            report_step_failure(parent_text, error->sqlerrcode, error->message);
        }
        CommitTransactionCommand();
        pg_write_barrier();
        step->done = true;
    }
    PG_END_TRY();
    proc_exit(0);
}
