// The readers of the floor from stored keys: the background workers that read the keys of this
// server's node pair in every database, once a call asks for them after a start without a mark
// file of this data directory's history (keys_floor.cpp is the gate that calls wait at;
// database_reader.cpp is the worker of one database, and keys_read.cpp its read). The reader raises
// the generator above the keys ahead of the clock up to the end of a window fixed when the read
// begins (core/key_floor.hpp), and keeps the highest key further ahead, which then stops
// generation.
//
// Processes. The reader, started by the first call that needs it (and again by a waiting call
// after it ends before the read is over), is connected to no database: it lists pg_database and
// starts one database reader after another, each connected to its database as the bootstrap
// superuser (allowed to connect where others are not), and waits for each to exit, then lists
// again for databases created meanwhile. A database reader that fails is retried; a database
// dropped meanwhile is passed over. The read is for one node pair; a call with a pair that no read
// since the start was for asks for a read of its own.
//
// Locking. KeysFloorState::pending is set at start-up and cleared by the reader once every
// database was read, after it has raised the generator and recorded a key beyond the window; a
// call reads it before its first id; read_pairs, set by the reader too, says which pairs were
// read. reader_claimed lets one reader run at a time. While a database is read, the reader holds
// the lock that connections to it take (RowExclusiveLock on the database), as a session lock,
// taken within a second or the read of that database fails and is retried. The database's reader
// joins the reader's lock group before it connects, so that its connection's request for that
// lock is granted at once: otherwise it would queue behind an ALTER, DROP or CREATE DATABASE
// waiting for the reader's lock, and the three would wait for each other where the deadlock
// detector cannot see it (the reader waits for its worker, not for a lock). KeysFloorState::lock
// (a spinlock) guards the records of the keys that hold generation back and of a failed read, for
// a few copies at a time; the reads themselves run without it. KeysFloorState::changed wakes the
// waiting calls.

#include <algorithm>

extern "C" {
#include "postgres.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_database.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/condition_variable.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lock.h"
#include "storage/proc.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

PGDLLEXPORT void snowflake_keys_reader_main(Datum);
}

#include "core/generator.hpp"
#include "core/key_floor.hpp"
#include "pg/clock.hpp"
#include "pg/compat.hpp"
#include "pg/keys_floor/keys_floor_parts.hpp"
#include "pg/keys_floor/keys_read.hpp"
#include "pg/settings.hpp"
#include "pg/shared_state.hpp"

namespace {

// A reader that ends, however it ends (a shutdown or pg_terminate_backend() in the middle of a
// database), releases that database's lock, which as a session lock no transaction's end would,
// and lets a waiting call start the next reader.
void release_reader_claim(int, Datum) {
    LockReleaseSession(DEFAULT_LOCKMETHOD);
    KeysFloorState &floor = snowflake_shared->keys_floor;
    floor.reader_requested.store(false);
    floor.reader_claimed.store(false);
    ConditionVariableBroadcast(&floor.changed);
}

// A database to read, as the reader listed it.
struct ListedDatabase {
    Oid oid;
    NameData name;
};

// Every database of the server but those an interrupted DROP DATABASE left invalid (which no one
// can connect to, and which must be dropped): templates and databases that take no connections
// can hold keys too. Allocated in the reader's memory context.
ListedDatabase *list_databases(int *count) {
    MemoryContext reader_context = CurrentMemoryContext;
    StartTransactionCommand();
    (void)GetTransactionSnapshot();
    Relation databases = table_open(DatabaseRelationId, AccessShareLock);
    TableScanDesc scan = table_beginscan_catalog(databases, 0, nullptr);
    int allocated = 16;
    auto *listed = static_cast<ListedDatabase *>(
        MemoryContextAlloc(reader_context, sizeof(ListedDatabase) * allocated));
    *count = 0;
    HeapTuple tuple;
    while ((tuple = heap_getnext(scan, ForwardScanDirection)) != nullptr) {
        const auto form = reinterpret_cast<Form_pg_database>(GETSTRUCT(tuple));
        if (form->datconnlimit == DATCONNLIMIT_INVALID_DB) {
            continue;
        }
        if (*count == allocated) {
            allocated *= 2;
            listed =
                static_cast<ListedDatabase *>(repalloc(listed, sizeof(ListedDatabase) * allocated));
        }
        listed[*count].oid = form->oid;
        listed[*count].name = form->datname;
        (*count)++;
    }
    table_endscan(scan);
    table_close(databases, AccessShareLock);
    CommitTransactionCommand();
    return listed;
}

// Whether a database still exists, for one whose reader failed: a database dropped meanwhile
// holds no keys.
bool database_exists(Oid database) {
    StartTransactionCommand();
    const bool exists = SearchSysCacheExists1(DATABASEOID, ObjectIdGetDatum(database));
    CommitTransactionCommand();
    return exists;
}

// Sleeps on the latch, cancellably (a shutdown request ends it).
void sleep_ms(long milliseconds) {
    (void)WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, milliseconds,
                    snowflake_wait_event("SnowflakeKeysReadRetry"));
    ResetLatch(MyLatch);
    CHECK_FOR_INTERRUPTS();
}

// The background worker that reads one database, or the reader itself when database is
// InvalidOid. Neither is restarted by the postmaster: a waiting call starts the reader again.
BackgroundWorker keys_reader_worker(Oid database) {
    BackgroundWorker worker{};
    if (OidIsValid(database)) {
        snprintf(worker.bgw_name, BGW_MAXLEN, "snowflake keys reader of database %u", database);
        strlcpy(worker.bgw_function_name, "snowflake_database_keys_reader_main", BGW_MAXLEN);
        worker.bgw_notify_pid = MyProcPid;
        // The reader's process, whose lock group the database's reader joins.
        memcpy(worker.bgw_extra, &MyProc, sizeof(MyProc));
    } else {
        strlcpy(worker.bgw_name, "snowflake keys reader", BGW_MAXLEN);
        strlcpy(worker.bgw_function_name, "snowflake_keys_reader_main", BGW_MAXLEN);
    }
    strlcpy(worker.bgw_type, "snowflake keys reader", BGW_MAXLEN);
    worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
    worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
    worker.bgw_restart_time = BGW_NEVER_RESTART;
    strlcpy(worker.bgw_library_name, "snowflake", BGW_MAXLEN);
    worker.bgw_main_arg = ObjectIdGetDatum(database);
    return worker;
}

// The lock that a connection to a database takes, held by the reader for as long as the
// database's reader runs, so that an ALTER or DROP DATABASE left open in a transaction cannot
// hold that connection up unseen: waited for a second at most, cancellably.
bool lock_database_within_budget(const LOCKTAG &database_lock) {
    const TimestampTz budget_end = GetCurrentTimestamp() + kKeysLockWaitBudgetMs * 1000;
    while (LockAcquire(&database_lock, RowExclusiveLock, true, true) == LOCKACQUIRE_NOT_AVAIL) {
        if (GetCurrentTimestamp() >= budget_end) {
            return false;
        }
        (void)WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 10,
                        snowflake_wait_event("SnowflakeKeysReadRetry"));
        ResetLatch(MyLatch);
        CHECK_FOR_INTERRUPTS();
    }
    return true;
}

// Reads one database in a worker of its own until the read succeeds or the database is gone.
void read_database(KeysFloorState &floor, const ListedDatabase &database) {
    LOCKTAG database_lock;
    SET_LOCKTAG_OBJECT(database_lock, InvalidOid, DatabaseRelationId, database.oid, 0);
    for (;;) {
        SpinLockAcquire(&floor.lock);
        floor.last_read_database = InvalidOid;
        SpinLockRelease(&floor.lock);
        if (!lock_database_within_budget(database_lock)) {
            snowflake_record_read_failure(
                floor, psprintf("database \"%s\" is locked by another session (an ALTER "
                                "or DROP DATABASE in a transaction not yet ended); find "
                                "it in pg_locks",
                                NameStr(database.name)));
            sleep_ms(kRetryMs);
            continue;
        }
        BackgroundWorker worker = keys_reader_worker(database.oid);
        BackgroundWorkerHandle *handle = nullptr;
        if (!RegisterDynamicBackgroundWorker(&worker, &handle)) {
            (void)LockRelease(&database_lock, RowExclusiveLock, true);
            snowflake_record_read_failure(
                floor, psprintf("no background worker slot was free to read database \"%s\"; "
                                "the read needs two free slots: raise max_worker_processes to at "
                                "least max_parallel_workers plus two plus the server's other "
                                "workers, and restart",
                                NameStr(database.name)));
            sleep_ms(kRetryMs);
            continue;
        }
        pid_t pid;
        if (WaitForBackgroundWorkerStartup(handle, &pid) == BGWH_STARTED) {
            (void)WaitForBackgroundWorkerShutdown(handle);
        }
        pfree(handle);
        (void)LockRelease(&database_lock, RowExclusiveLock, true);
        SpinLockAcquire(&floor.lock);
        const bool read = floor.last_read_database == database.oid;
        const bool explained = floor.read_failure[0] != '\0';
        SpinLockRelease(&floor.lock);
        if (read) {
            snowflake_record_read_failure(floor, "");
            return;
        }
        if (!database_exists(database.oid)) {
            return;
        }
        if (!explained) {
            snowflake_record_read_failure(
                floor, psprintf("the reader of database \"%s\" ended before it had read "
                                "the keys; the server log says why",
                                NameStr(database.name)));
        }
        sleep_ms(kRetryMs);
    }
}

// Reads every database, and then those created meanwhile (from a template that may be gone by
// now), until a listing shows no database that was not read; returns how many were read.
int read_every_database(KeysFloorState &floor) {
    int read_count = 0;
    int read_room = 16;
    auto *read = static_cast<Oid *>(palloc(sizeof(Oid) * read_room));
    for (;;) {
        int listed_count = 0;
        const ListedDatabase *listed = list_databases(&listed_count);
        bool any_new = false;
        for (int i = 0; i < listed_count; i++) {
            if (std::find(read, read + read_count, listed[i].oid) != read + read_count) {
                continue;
            }
            any_new = true;
            read_database(floor, listed[i]);
            if (read_count == read_room) {
                read_room *= 2;
                read = static_cast<Oid *>(repalloc(read, sizeof(Oid) * read_room));
            }
            read[read_count++] = listed[i].oid;
        }
        if (!any_new) {
            return read_count;
        }
    }
}

// Begins a read for the node pair a call asked for, or else the one set now, with a window from
// now and nothing beyond it yet; a read while a node id is unset reads nothing, and the first call
// once both are set reads again. A hold of another pair is dropped (there is room for one): that
// pair is read again when a call has it, and the floor stays armed across restarts.
void start_read(KeysFloorState &floor) {
    int64 node_bits = floor.pair_requested.exchange(kNoPairRequested);
    if (node_bits == kNoPairRequested) {
        const snowflake::NodeResult node =
            snowflake::make_node(snowflake_datacenter_id_setting, snowflake_machine_id_setting);
        node_bits = node.status == snowflake::CodecStatus::kOk ? node.node.bits : kUnsetNodeBits;
    }
    if (floor.beyond_hold.exchange(-1) >= 0) {
        snowflake_note_pair_read(floor, floor.beyond_hold_node_bits.load(), false);
        floor.hold_dropped.store(true);
    }
    SpinLockAcquire(&floor.lock);
    floor.beyond_key = -1;
    floor.beyond_keys = 0;
    floor.beyond_columns = 0;
    floor.beyond_source[0] = '\0';
    SpinLockRelease(&floor.lock);
    floor.window_end_ms.store(snowflake::key_window_end(snowflake_wall_clock_unix_ms(),
                                                        snowflake_key_floor_max_lead_setting));
    floor.read_node_bits.store(node_bits);
}

// Ends the read: a key beyond the window, if any, stops generation from now on, and the calls
// that wait may go on.
void finish_read(SnowflakeShared *shared, int databases, TimestampTz started) {
    KeysFloorState &floor = shared->keys_floor;
    SpinLockAcquire(&floor.lock);
    const int64 beyond_key = floor.beyond_key;
    const uint64_t beyond_keys = floor.beyond_keys;
    const uint32_t beyond_columns = floor.beyond_columns;
    char beyond_source[kKeySourceBytes];
    strlcpy(beyond_source, floor.beyond_source, sizeof(beyond_source));
    SpinLockRelease(&floor.lock);
    long seconds = 0;
    int microseconds = 0;
    TimestampDifference(started, GetCurrentTimestamp(), &seconds, &microseconds);
    const long elapsed_ms = seconds * 1000 + microseconds / 1000;
    const snowflake::LastIssued last = snowflake::last_issued(shared->generator);
    if (beyond_key >= 0 && last.any && last.unix_ms >= snowflake::unix_ms_of_key(beyond_key)) {
        ereport(LOG, (errmsg("snowflake: key %lld of %s is beyond snowflake.key_floor_max_lead "
                             "but not beyond the mark the generator started from: it holds "
                             "nothing back",
                             static_cast<long long>(beyond_key), beyond_source)));
    } else if (beyond_key >= 0) {
        floor.beyond_hold_node_bits.store(floor.read_node_bits.load());
        floor.beyond_hold.store(beyond_key);
        ereport(WARNING,
                (errmsg("snowflake: key %lld of %s is beyond snowflake.key_floor_max_lead: "
                        "generation stops until the clock passes it",
                        static_cast<long long>(beyond_key), beyond_source),
                 errdetail("Keys of this server's node pair beyond the bound: %llu, in %u "
                           "columns, which the lines above name.",
                           static_cast<unsigned long long>(beyond_keys), beyond_columns),
                 errhint("%s",
                         snowflake_beyond_key_advice(beyond_key, snowflake_wall_clock_unix_ms()))));
    } else if (floor.read_node_bits.load() != kUnsetNodeBits && !floor.hold_dropped.load()) {
        // A key ahead of the clock raised the generator, which no mark in the file covers yet:
        // the file that keeps the floor armed stays until one does (keys_floor.cpp).
        const int64 floor_ms = floor.floor_ms.load();
        int64 until = floor.unchecked_until_ms.load();
        while (until < floor_ms &&
               !floor.unchecked_until_ms.compare_exchange_weak(until, floor_ms)) {
        }
        if (floor.unchecked_until_ms.load() == 0) {
            snowflake_forget_keys_unchecked();
        }
    }
    if (floor.read_node_bits.load() != kUnsetNodeBits) {
        snowflake_note_pair_read(floor, floor.read_node_bits.load(), true);
    }
    ereport(LOG, (errmsg("snowflake: the stored keys of %d databases were read in %ld ms after a "
                         "start without a mark file of this data directory; ids are issued from "
                         "now on",
                         databases, elapsed_ms)));
    floor.pending.store(false);
    ConditionVariableBroadcast(&floor.changed);
}

}  // namespace

void snowflake_request_keys_reader(SnowflakeShared *shared) {
    KeysFloorState &floor = shared->keys_floor;
    if (floor.reader_claimed.load() || floor.reader_requested.exchange(true)) {
        return;
    }
    BackgroundWorker worker = keys_reader_worker(InvalidOid);
    if (!RegisterDynamicBackgroundWorker(&worker, nullptr)) {
        floor.reader_requested.store(false);
        ereport(ERROR,
                (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                 errmsg("could not start the background worker that reads the stored keys after a "
                        "start without a mark file of this data directory"),
                 errdetail("No id is issued until it has read the keys of every database; no "
                           "background worker slot is free, and the read needs two."),
                 errhint("Raise max_worker_processes to at least max_parallel_workers plus two "
                         "plus the server's other workers and restart the server, or end other "
                         "background workers, then call again.")));
    }
}

// The reader: one at a time, started by a call that waits for it, and none in pg_upgrade's runs
// of either cluster, whose databases it would hold up and whose tables are not there yet.
void snowflake_keys_reader_main(Datum) {
    pqsignal(SIGTERM, die);
    BackgroundWorkerUnblockSignals();
    SnowflakeShared *shared = snowflake_shared;
    if (shared == nullptr || IsBinaryUpgrade || !shared->keys_floor.pending.load() ||
        shared->keys_floor.reader_claimed.exchange(true)) {
        if (shared != nullptr) {
            shared->keys_floor.reader_requested.store(false);
        }
        proc_exit(0);
    }
    before_shmem_exit(release_reader_claim, 0);
    BackgroundWorkerInitializeConnection(nullptr, nullptr, 0);
    BecomeLockGroupLeader();
    pgstat_report_activity(STATE_RUNNING, "reading the stored keys of every database");
    const TimestampTz started = GetCurrentTimestamp();
    KeysFloorState &floor = shared->keys_floor;
    start_read(floor);
    const int count =
        floor.read_node_bits.load() != kUnsetNodeBits ? read_every_database(floor) : 0;
    finish_read(shared, count, started);
    proc_exit(0);
}

void snowflake_record_read_failure(KeysFloorState &floor, const char *failure) {
    SpinLockAcquire(&floor.lock);
    strlcpy(floor.read_failure, failure, sizeof(floor.read_failure));
    SpinLockRelease(&floor.lock);
    ConditionVariableBroadcast(&floor.changed);
}
