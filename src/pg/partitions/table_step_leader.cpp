// The run's side of one table's step (table_step.hpp describes the processes and their shared
// segment): it starts the table's worker, passes on what the worker reports, waits for it
// cancellably, ends it at the time limit, and reports what it saw from outside.

extern "C" {
#include "postgres.h"

#include "lib/stringinfo.h"
#include "libpq/pqformat.h"
#include "libpq/pqmq.h"
#include "mb/pg_wchar.h"
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
#include "utils/memutils.h"
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

// The longest text of a message passed on, so that one huge notice read by a slow client cannot
// hold the run past the limit.
constexpr int kPassedOnBytes = 8192;

// Cuts a text of a message passed on to kPassedOnBytes, on a character's boundary.
void clip(char **text) {
    const size_t length = *text != nullptr ? strlen(*text) : 0;
    if (length <= static_cast<size_t>(kPassedOnBytes)) {
        return;
    }
    const int kept = pg_mbcliplen(*text, static_cast<int>(length), kPassedOnBytes);
    *text = psprintf("%.*s ... (cut at %d bytes)", kept, *text, kPassedOnBytes);
}

// Whether the client's encoding can show every text of a message: ThrowErrorData() sends them
// all, the names of the objects included.
bool client_can_show_all(const ErrorData &error) {
    const char *texts[] = {error.message,      error.detail,        error.hint,
                           error.context,      error.schema_name,   error.table_name,
                           error.column_name,  error.datatype_name, error.constraint_name,
                           error.internalquery};
    for (const char *text : texts) {
        if (!client_can_show(text)) {
            return false;
        }
    }
    return true;
}

// The error that ended a worker, as its last message said.
struct EndingError {
    int sqlerrcode;
    const char *message;  // nullptr: none came
};

// Passes on what the worker has sent, as if raised here, until the queue is empty or the
// deadline, so that a flood read by a slow client cannot hold the run past the limit. Without
// pass_on (after the limit) it is read and dropped, so that a worker blocked on a full queue can
// end. Each message is parsed in memory freed once it is passed on; an error that ended the
// worker is kept.
void pass_on_messages(Oid parent, shm_mq_handle *queue, EndingError *ending, bool pass_on,
                      TimestampTz deadline) {
    const MemoryContext caller_memory = CurrentMemoryContext;
    const MemoryContext message_memory =
        AllocSetContextCreate(caller_memory, "snowflake step message", ALLOCSET_SMALL_SIZES);
    Size size = 0;
    void *data = nullptr;
    while (shm_mq_receive(queue, &size, &data, true) == SHM_MQ_SUCCESS) {
        if (!pass_on) {
            continue;
        }
        MemoryContextSwitchTo(message_memory);
        StringInfoData message;
        initStringInfo(&message);
        appendBinaryStringInfo(&message, static_cast<const char *>(data), static_cast<int>(size));
        const char type = static_cast<char>(pq_getmsgbyte(&message));
        ErrorData error{};
        const bool reported = type == 'N' || type == 'E';
        if (reported) {
            pq_parse_errornotice(&message, &error);
        }
        if (reported && error.elevel >= ERROR) {
            ending->sqlerrcode = error.sqlerrcode;
            ending->message = error.message != nullptr
                                  ? MemoryContextStrdup(caller_memory, error.message)
                                  : nullptr;
        } else if (reported && client_can_show_all(error)) {
            clip(&error.message);
            clip(&error.detail);
            clip(&error.hint);
            clip(&error.context);
            ThrowErrorData(&error);
        } else if (reported) {
            ereport(error.elevel,
                    (errmsg("a message of the maintenance of the table of OID %u was left out: "
                            "client_encoding %s cannot show it",
                            parent, pg_get_client_encoding_name()),
                     errhint("Call the run with client_encoding set to the server's encoding "
                             "to see it.")));
        }
        MemoryContextSwitchTo(caller_memory);
        MemoryContextReset(message_memory);
        if (GetCurrentTimestamp() >= deadline) {
            break;
        }
    }
    MemoryContextDelete(message_memory);
}

}  // namespace

// Whether the client's encoding can show a text (a table's name, a message of the owner's code):
// one it cannot would end the run where it is reported. Only the conversion's own refusal is
// caught; the conversion holds nothing, and any other error goes on.
bool client_can_show(const char *text) {
    if (text == nullptr || pg_get_client_encoding() == GetDatabaseEncoding()) {
        return true;
    }
    const MemoryContext context = CurrentMemoryContext;
    volatile bool shown = true;
    PG_TRY();
    { (void)pg_server_to_client(text, static_cast<int>(strlen(text))); }
    PG_CATCH();
    {
        MemoryContextSwitchTo(context);
        ErrorData *error = CopyErrorData();
        if (error->sqlerrcode != ERRCODE_UNTRANSLATABLE_CHARACTER &&
            error->sqlerrcode != ERRCODE_CHARACTER_NOT_IN_REPERTOIRE) {
            PG_RE_THROW();
        }
        FlushErrorState();
        FreeErrorData(error);
        shown = false;
    }
    PG_END_TRY();
    return shown;
}

// A table's name as the run's messages show it: by its OID where the client's encoding cannot.
const char *shown_table_text(Oid parent) {
    const char *text = table_text(parent);
    return client_can_show(text) ? text : psprintf("the table of OID %u", parent);
}

// A table whose step failed: a warning, and a notice as for the rows of the others.
void report_step_failure(const char *parent, int sqlerrcode, const char *message) {
    ereport(WARNING,
            (errcode(sqlerrcode),
             errmsg("time partitions of %s were not maintained: %s", parent, message),
             errhint("The run goes on to the other tables. To see the whole error, call "
                     "snowflake_maintain_partitions(%s), which maintains that table alone, in "
                     "your session and without a time limit: its owner's code can end your "
                     "session, or hold it.",
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
        return -1;
    }
    shm_mq_handle *messages = shm_mq_attach(queue, segment, handle);
    EndingError ending{ERRCODE_ADMIN_SHUTDOWN, nullptr};
    bool ended_at_limit = false;
    PG_ENSURE_ERROR_CLEANUP(end_step_worker, PointerGetDatum(handle));
    {
        pid_t pid;
        const TimestampTz deadline = TimestampTzPlusMilliseconds(started, limit_ms);
        while (GetBackgroundWorkerPid(handle, &pid) != BGWH_STOPPED) {
            pass_on_messages(parent, messages, &ending, !ended_at_limit, deadline);
            const long elapsed = elapsed_ms(started);
            if (elapsed >= limit_ms && !ended_at_limit) {
                TerminateBackgroundWorker(handle);
                ended_at_limit = true;
            }
            wait_for_step(ended_at_limit ? 100 : limit_ms - elapsed);
        }
        pass_on_messages(parent, messages, &ending, !ended_at_limit, deadline);
    }
    PG_END_ENSURE_ERROR_CLEANUP(end_step_worker, PointerGetDatum(handle));
    pg_read_barrier();
    if (!step->done && ended_at_limit) {
        report_step_failure(shown_table_text(parent), ERRCODE_QUERY_CANCELED,
                            psprintf("took longer than %d s, the limit of one table in the "
                                     "maintenance of every table",
                                     limit_ms / 1000));
    } else if (!step->done) {
        report_step_failure(shown_table_text(parent), ending.sqlerrcode,
                            psprintf("the session that maintained it ended before it was done: %s",
                                     ending.message != nullptr && client_can_show(ending.message)
                                         ? ending.message
                                         : "the server log says why"));
    }
    dsm_detach(segment);
    pfree(handle);
    return elapsed_ms(started);
}

}  // namespace snowflake_partitions
