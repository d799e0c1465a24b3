// The run's side of one table's step (table_step.hpp describes the processes and their shared
// segment): it starts the table's worker, passes on what the worker reports, waits for it
// cancellably, ends it at the time limit, and reports what it saw from outside.

extern "C" {
#include "postgres.h"

#include "lib/stringinfo.h"
#include "libpq/pqformat.h"
#include "libpq/pqmq.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/dsm.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "storage/shm_mq.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/timestamp.h"
}

#include "pg/compat.hpp"
#include "pg/object_names.hpp"
#include "pg/partitions/table_step.hpp"

namespace snowflake_partitions {

namespace {

// How long the run tries for a free background worker slot before it leaves the table.
constexpr long kSlotWaitMs = 1000;

// The worker of one table, connected to this database; the postmaster tells this process when it
// starts and stops.
BackgroundWorker step_worker(Oid parent, dsm_segment *segment) {
    BackgroundWorker worker{};
    snprintf(worker.bgw_name, BGW_MAXLEN, "snowflake partition maintenance of table %u", parent);
    strlcpy(worker.bgw_type, "snowflake partition maintenance", BGW_MAXLEN);
    strlcpy(worker.bgw_function_name, "snowflake_partition_step_main", BGW_MAXLEN);
    strlcpy(worker.bgw_library_name, "snowflake", BGW_MAXLEN);
    worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
    worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
    worker.bgw_restart_time = BGW_NEVER_RESTART;
    worker.bgw_main_arg = UInt32GetDatum(dsm_segment_handle(segment));
    worker.bgw_notify_pid = MyProcPid;
    return worker;
}

// Sleeps until the postmaster, the worker or its queue sets the latch, or for at most
// milliseconds; a cancel ends the wait.
void wait_for_step(long milliseconds) {
    (void)WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, Max(milliseconds, 1L),
                    snowflake_wait_event("SnowflakePartitionStep"));
    ResetLatch(MyLatch);
    CHECK_FOR_INTERRUPTS();
}

// Ends the worker when the run ends with an error or its session ends: nothing of the caller's
// then awaits it.
void end_step_worker(int, Datum handle) {
    TerminateBackgroundWorker(reinterpret_cast<BackgroundWorkerHandle *>(DatumGetPointer(handle)));
}

// The run counts in milliseconds of the wall clock, as the share and the limit are.
long elapsed_ms(TimestampTz since) {
    return static_cast<long>((GetCurrentTimestamp() - since) / 1000);
}

// Registers the worker, trying again for a while when every slot is taken; nullptr if none came
// free.
BackgroundWorkerHandle *start_step_worker(BackgroundWorker *worker) {
    const TimestampTz started = GetCurrentTimestamp();
    BackgroundWorkerHandle *handle = nullptr;
    while (!RegisterDynamicBackgroundWorker(worker, &handle)) {
        if (elapsed_ms(started) >= kSlotWaitMs) {
            return nullptr;
        }
        wait_for_step(50);
    }
    return handle;
}

// Passes on the notices and warnings the worker has sent so far, as if raised here; keeps the
// message of an error that ended it, which is the run's to report. Returns it, or the one kept
// before.
const char *pass_on_messages(shm_mq_handle *queue, const char *ending_error) {
    Size size = 0;
    void *data = nullptr;
    while (shm_mq_receive(queue, &size, &data, true) == SHM_MQ_SUCCESS) {
        StringInfoData message;
        initStringInfo(&message);
        appendBinaryStringInfo(&message, static_cast<const char *>(data), static_cast<int>(size));
        const char type = static_cast<char>(pq_getmsgbyte(&message));
        if (type != 'N' && type != 'E') {
            continue;
        }
        ErrorData error{};
        pq_parse_errornotice(&message, &error);
        if (error.elevel >= ERROR) {
            ending_error = error.message;
            continue;
        }
        ThrowErrorData(&error);
    }
    return ending_error;
}

}  // namespace

// A table whose step failed: a warning, and a notice as for the rows of the others.
void report_step_failure(const char *parent, int sqlerrcode, const char *message) {
    ereport(WARNING,
            (errcode(sqlerrcode),
             errmsg("time partitions of %s were not maintained: %s", parent, message),
             errhint("Call snowflake_maintain_partitions(%s) to see the whole error (it maintains "
                     "that table alone, without a time limit); the other tables were maintained.",
                     quote_literal_cstr(parent))));
    ereport(NOTICE, (errmsg("%s: failed: %s", parent, message)));
}

// Runs one table's step in its worker (table_step.hpp).
long run_table_step(Oid parent, int limit_ms, const char *function_name) {
    const TimestampTz started = GetCurrentTimestamp();
    dsm_segment *segment = dsm_create(MAXALIGN(sizeof(TableStep)) + kStepQueueBytes, 0);
    auto *step = static_cast<TableStep *>(dsm_segment_address(segment));
    *step = TableStep{};
    step->database = MyDatabaseId;
    step->session_user = GetSessionUserId();
    GetUserIdAndSecContext(&step->current_user, &step->security_context);
    step->parent = parent;
    strlcpy(step->client_min_messages, GetConfigOption("client_min_messages", false, false),
            sizeof(step->client_min_messages));
    shm_mq *queue = shm_mq_create(step_queue(step), kStepQueueBytes);
    shm_mq_set_receiver(queue, MyProc);
    BackgroundWorker worker = step_worker(parent, segment);
    BackgroundWorkerHandle *handle = start_step_worker(&worker);
    if (handle == nullptr) {
        dsm_detach(segment);
        ereport(WARNING,
                (errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
                 errmsg("%s left %s to its next run: no background worker slot was free",
                        function_name, table_text(parent)),
                 errhint("Each table is maintained in a background worker of its own: raise "
                         "max_worker_processes to at least max_parallel_workers plus one plus "
                         "the server's other workers, and restart.")));
        return elapsed_ms(started);
    }
    shm_mq_handle *messages = shm_mq_attach(queue, segment, handle);
    const char *ending_error = nullptr;
    bool ended_at_limit = false;
    PG_ENSURE_ERROR_CLEANUP(end_step_worker, PointerGetDatum(handle));
    {
        pid_t pid;
        while (GetBackgroundWorkerPid(handle, &pid) != BGWH_STOPPED) {
            ending_error = pass_on_messages(messages, ending_error);
            const long elapsed = elapsed_ms(started);
            if (elapsed >= limit_ms && !ended_at_limit) {
                TerminateBackgroundWorker(handle);
                ended_at_limit = true;
            }
            wait_for_step(ended_at_limit ? 100 : limit_ms - elapsed);
        }
        ending_error = pass_on_messages(messages, ending_error);
    }
    PG_END_ENSURE_ERROR_CLEANUP(end_step_worker, PointerGetDatum(handle));
    pg_read_barrier();
    if (step->outcome == StepOutcome::kNone && ended_at_limit) {
        report_step_failure(table_text(parent), ERRCODE_QUERY_CANCELED,
                            psprintf("took longer than %d s, the limit of one table in the "
                                     "maintenance of every table",
                                     limit_ms / 1000));
    } else if (step->outcome == StepOutcome::kNone) {
        report_step_failure(
            table_text(parent), ERRCODE_ADMIN_SHUTDOWN,
            psprintf("the session that maintained it ended before it was done: %s",
                     ending_error != nullptr ? ending_error : "the server log says why"));
    }
    dsm_detach(segment);
    pfree(handle);
    return elapsed_ms(started);
}

}  // namespace snowflake_partitions
