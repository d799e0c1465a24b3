// One table's step of a scheduled run (snowflake_run_partition_maintenance()), run in a session of
// its own: a background worker connected as the caller (table_step_worker.cpp), which the run
// starts, awaits cancellably and ends at the time limit (table_step_leader.cpp). The table's
// owner's code runs in that session only: whatever it does there (transaction_timeout,
// exit_on_error, a loop that catches every cancel) ends that session at worst, not the run.
//
// Locking. The run and its worker share one segment of dynamic shared memory per table: a
// TableStep, then a message queue (storage/shm_mq.h) that carries the worker's notices, warnings
// and error to the run, as a parallel worker's go to its leader. The run writes the request
// before it starts the worker and reads whether the step is done only after the postmaster has
// reported the worker gone; the worker sets it last, behind a write barrier. The queue has its own
// locking.
//
// Include after postgres.h and storage/shm_mq.h.
#pragma once

namespace snowflake_partitions {

// The request, written by the run, and whether the step is done, written by the worker.
struct TableStep {
    Oid database;
    Oid session_user;
    Oid current_user;
    int security_context;
    Oid parent;
    char client_min_messages[32];
    // Set once the step's end is the worker's to tell: at its commit, or once its failure is
    // reported. The run reports a step that ended before that itself.
    bool done;
};

// The size of the queue that follows the TableStep in the segment.
constexpr Size kStepQueueBytes = 64 * 1024;

// The queue in a step's segment.
inline shm_mq *step_queue(TableStep *step) {
    return reinterpret_cast<shm_mq *>(reinterpret_cast<char *>(step) + MAXALIGN(sizeof(TableStep)));
}

// Runs the maintenance of one table in a worker of its own, for at most limit_ms, and reports
// what it did as notices and warnings; a cancel of the caller's ends the worker and the call.
// Returns how many milliseconds the table cost the run, or -1 if no background worker slot came
// free within a second.
long run_table_step(Oid parent, int limit_ms, const char *function_name);

// Whether the client's encoding can show a text; a name or a message it cannot would end the
// run where it is reported.
bool client_can_show(const char *text);

// A table's name as the run's messages show it: by its OID where the client's encoding cannot.
const char *shown_table_text(Oid parent);

// Reports a table whose step failed: a warning, and a notice as for the rows of the others. The
// worker reports its own failure; the run those it sees from outside.
void report_step_failure(const char *parent, int sqlerrcode, const char *message);

}  // namespace snowflake_partitions
