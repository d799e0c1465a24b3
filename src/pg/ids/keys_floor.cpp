// The floor from keys: after a start without a mark file (pg_upgrade, a restore without the file,
// its removal), the highest timestamp this server issued is unknown. Before any id is issued, a
// background worker then reads the stored keys of this server's node pair in every database of
// the server (keys_read.cpp says which columns and how), one database after another, and raises
// the generator above those ahead of the clock up to the end of a window fixed when the read
// begins (core/key_floor.hpp). A key further ahead stops generation until the clock passes it or
// a superuser releases it with snowflake_release_key(). Calls wait, cancellably, until the read
// is over, and none restarts it. A file in the data directory keeps the floor armed across
// restarts until one read of every database has ended. doc/operations.md "Upgrading PostgreSQL"
// and "Guarantees" say what it covers and why.
//
// Processes. The reader (registered in _PG_init, started once the server can generate, or
// started by a waiting call when none runs, as after a crash re-initialisation) is connected to
// no database: it lists pg_database and starts one database reader after another, each connected
// to its database as the bootstrap superuser (allowed to connect where others are not), and
// waits for each to exit, then lists again for databases created meanwhile. A database reader
// that fails is retried; a database dropped meanwhile is passed over. The read is for one node
// pair; a call with a pair that no read since the start was for asks for a read of its own.
//
// Locking. keys_floor_pending is set at start-up and cleared by the reader once every database
// was read, after it has raised the generator and recorded a key beyond the window; a call reads
// it before its first id; keys_read_pairs, set by the reader too, says which pairs were read.
// keys_reader_claimed lets one reader run at a time. While a database is read, the reader holds
// the lock that connections to it take (RowExclusiveLock on the database), as a session lock,
// taken within a second or the read of that database fails and is retried. The database's reader
// joins the reader's lock group before it connects, so that its connection's request for that
// lock is granted at once: otherwise it would queue behind an ALTER, DROP or CREATE DATABASE
// waiting for the reader's lock, and the three would wait for each other where the deadlock
// detector cannot see it (the reader waits for its worker, not for a lock). keys_floor_lock (a
// spinlock) guards the records of the keys that hold generation back and of a failed read, for a
// few copies at a time; the reads themselves run without it. keys_read_changed wakes the waiting
// calls.

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>

extern "C" {
#include "postgres.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_database.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/condition_variable.h"
#include "storage/fd.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lock.h"
#include "storage/proc.h"
#include "tcop/tcopprot.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

PG_FUNCTION_INFO_V1(snowflake_release_key);
PGDLLEXPORT void snowflake_keys_reader_main(Datum);
PGDLLEXPORT void snowflake_database_keys_reader_main(Datum);
}

#include "core/codec.hpp"
#include "core/generator.hpp"
#include "core/key_floor.hpp"
#include "pg/compat.hpp"
#include "pg/ids/durable_mark.hpp"
#include "pg/ids/keys_floor.hpp"
#include "pg/ids/keys_read.hpp"
#include "pg/settings.hpp"
#include "pg/shared_state.hpp"

namespace {

// Present while the keys of some database may still be above what the generator knows of.
constexpr char kKeysUncheckedFileName[] = "snowflake_keys_unchecked";

// How long the reader waits before it reads a database again whose read failed, or tries again
// to start a database reader when no background worker slot was free.
constexpr long kRetryMs = 5000;

// How long a waiting call waits for a reader to claim the read before it asks for one.
constexpr long kReaderClaimWaitMs = 1000;

// keys_read_node_bits for a read while a node id was unset, which reads nothing: the first call
// with both set reads again; and keys_read_pair_requested when no call asked for a pair.
constexpr int64 kUnsetNodeBits = -2;
constexpr int64 kNoPairRequested = -1;

// The settings that a database's or the bootstrap superuser's defaults could turn against a
// database's reader (a timeout that ends it, a deferrable serializable snapshot that waits), set
// back to PostgreSQL's defaults in it.
constexpr const char *kReaderSettings[][2] = {
    {"statement_timeout", "0"},
    {"lock_timeout", "0"},
    {"idle_in_transaction_session_timeout", "0"},
    {"default_transaction_isolation", "read committed"},
    {"default_transaction_read_only", "off"},
    {"default_transaction_deferrable", "off"},
};

// The bit of a node pair in keys_read_pairs.
struct PairBit {
    size_t word;
    uint64_t mask;
};

PairBit pair_bit(int64 node_bits) {
    const auto pair =
        static_cast<uint64_t>(node_bits >> snowflake::kMachineShift) & (kNodePairCount - 1);
    return {pair / 64, uint64_t{1} << (pair % 64)};
}

// Whether a read since the start was for this pair.
bool pair_was_read(const SnowflakeShared *shared, int64 node_bits) {
    const PairBit bit = pair_bit(node_bits);
    return (shared->keys_read_pairs[bit.word].load() & bit.mask) != 0;
}

// Raises the generator through a millisecond and, for a key ahead of the clock, records which key
// it was, so that a refusal can name it; the later of two records wins.
void raise_floor_through(SnowflakeShared *shared, int64 through_ms, int64 key, const char *source,
                         int64 now_unix_ms) {
    const snowflake::LastIssued last = snowflake::last_issued(shared->generator);
    if (last.any && last.unix_ms >= through_ms) {
        return;
    }
    if (through_ms >= now_unix_ms && through_ms > shared->key_floor_ms.load()) {
        SpinLockAcquire(&shared->keys_floor_lock);
        shared->key_floor_key = key;
        strlcpy(shared->key_floor_source, source, sizeof(shared->key_floor_source));
        SpinLockRelease(&shared->keys_floor_lock);
        shared->key_floor_ms.store(through_ms);
    }
    snowflake_raise_generator_through(shared, through_ms);
}

// Keeps the highest key beyond the window that any database holds, for the end of the read.
void record_beyond_window(SnowflakeShared *shared, const DatabaseKeys &keys) {
    if (keys.beyond_window < 0) {
        return;
    }
    SpinLockAcquire(&shared->keys_floor_lock);
    shared->beyond_key_columns += static_cast<uint32_t>(keys.beyond_window_columns);
    if (keys.beyond_window > shared->beyond_key) {
        shared->beyond_key = keys.beyond_window;
        strlcpy(shared->beyond_key_source, keys.beyond_window_source,
                sizeof(shared->beyond_key_source));
    }
    SpinLockRelease(&shared->keys_floor_lock);
}

// Records why the read of a database failed (or, with an empty text, that none has now), and
// wakes the waiting calls so that they can say so.
void record_read_failure(SnowflakeShared *shared, const char *failure) {
    SpinLockAcquire(&shared->keys_floor_lock);
    strlcpy(shared->keys_read_failure, failure, sizeof(shared->keys_read_failure));
    SpinLockRelease(&shared->keys_floor_lock);
    ConditionVariableBroadcast(&shared->keys_read_changed);
}

// Applies what the read of the connected database found: the generator is raised above its keys
// in the window, and its highest key beyond the window is kept for the end of the read.
void apply_database_keys(SnowflakeShared *shared, const DatabaseKeys &keys,
                         const snowflake::KeyWindow &window, int64 now_unix_ms) {
    const char *database = get_database_name(MyDatabaseId);
    raise_floor_through(shared,
                        snowflake::key_floor_through_ms(window, now_unix_ms, keys.in_window),
                        keys.in_window, keys.in_window_source, now_unix_ms);
    record_beyond_window(shared, keys);
    if (keys.in_window < 0) {
        ereport(LOG, (errmsg("snowflake: no key of this server's node pair ahead of the clock "
                             "within snowflake.key_floor_max_lead in database \"%s\" (%d columns "
                             "read)",
                             database, keys.columns)));
    } else {
        ereport(LOG, (errmsg("snowflake: raised the generator above key %lld of %s",
                             static_cast<long long>(keys.in_window), keys.in_window_source),
                      errdetail("It is the highest key of this server's node pair ahead of the "
                                "clock within snowflake.key_floor_max_lead in %d columns; ids "
                                "issued from now on are above it.",
                                keys.columns)));
    }
}

// Creates the file that keeps the floor from keys armed across restarts.
void create_keys_unchecked_file() {
    const int fd = OpenTransientFile(kKeysUncheckedFileName, O_WRONLY | O_CREAT | PG_BINARY);
    if (fd < 0 || CloseTransientFile(fd) != 0 ||
        fsync_fname_ext(kKeysUncheckedFileName, false, false, LOG) != 0 ||
        fsync_fname_ext(".", true, false, LOG) != 0) {
        ereport(LOG, (errcode_for_file_access(),
                      errmsg("could not create \"%s\": %m; if the server restarts before the "
                             "keys of every database were read, they are not read again",
                             kKeysUncheckedFileName)));
    }
}

// Once the keys of every database were read and nothing beyond the window stops generation, the
// mark file is trusted again at the next start.
void remove_keys_unchecked_file() {
    if (unlink(kKeysUncheckedFileName) != 0 && errno != ENOENT) {
        ereport(LOG, (errcode_for_file_access(),
                      errmsg("could not remove file \"%s\": %m; the next start reads the keys "
                             "again",
                             kKeysUncheckedFileName)));
        return;
    }
    (void)fsync_fname_ext(".", true, false, LOG);
}

// A reader that ends, however it ends (a shutdown or pg_terminate_backend() in the middle of a
// database), releases that database's lock, which as a session lock no transaction's end would,
// and lets a waiting call start the next reader.
void release_reader_claim(int, Datum) {
    LockReleaseSession(DEFAULT_LOCKMETHOD);
    SnowflakeShared *shared = snowflake_shared;
    shared->keys_reader_requested.store(false);
    shared->keys_reader_claimed.store(false);
    ConditionVariableBroadcast(&shared->keys_read_changed);
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
// InvalidOid.
BackgroundWorker keys_reader_worker(Oid database) {
    BackgroundWorker worker{};
    if (OidIsValid(database)) {
        snprintf(worker.bgw_name, BGW_MAXLEN, "snowflake keys reader of database %u", database);
        strlcpy(worker.bgw_function_name, "snowflake_database_keys_reader_main", BGW_MAXLEN);
        worker.bgw_restart_time = BGW_NEVER_RESTART;
        worker.bgw_notify_pid = MyProcPid;
        // The reader's process, whose lock group the database's reader joins.
        memcpy(worker.bgw_extra, &MyProc, sizeof(MyProc));
    } else {
        strlcpy(worker.bgw_name, "snowflake keys reader", BGW_MAXLEN);
        strlcpy(worker.bgw_function_name, "snowflake_keys_reader_main", BGW_MAXLEN);
        // Restarted after an error; it ends for good once the read is over.
        worker.bgw_restart_time = kRetryMs / 1000;
    }
    strlcpy(worker.bgw_type, "snowflake keys reader", BGW_MAXLEN);
    worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
    worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
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
void read_database(SnowflakeShared *shared, const ListedDatabase &database) {
    LOCKTAG database_lock;
    SET_LOCKTAG_OBJECT(database_lock, InvalidOid, DatabaseRelationId, database.oid, 0);
    for (;;) {
        SpinLockAcquire(&shared->keys_floor_lock);
        shared->last_read_database = InvalidOid;
        SpinLockRelease(&shared->keys_floor_lock);
        if (!lock_database_within_budget(database_lock)) {
            record_read_failure(shared,
                                psprintf("database \"%s\" is locked by another session (an ALTER "
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
            record_read_failure(
                shared, psprintf("no background worker slot was free to read database \"%s\"; "
                                 "raise max_worker_processes",
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
        SpinLockAcquire(&shared->keys_floor_lock);
        const bool read = shared->last_read_database == database.oid;
        const bool explained = shared->keys_read_failure[0] != '\0';
        SpinLockRelease(&shared->keys_floor_lock);
        if (read) {
            record_read_failure(shared, "");
            return;
        }
        if (!database_exists(database.oid)) {
            return;
        }
        if (!explained) {
            record_read_failure(shared,
                                psprintf("the reader of database \"%s\" ended before it had read "
                                         "the keys; the server log says why",
                                         NameStr(database.name)));
        }
        sleep_ms(kRetryMs);
    }
}

// Reads every database, and then those created meanwhile (from a template that may be gone by
// now), until a listing shows no database that was not read; returns how many were read.
int read_every_database(SnowflakeShared *shared) {
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
            read_database(shared, listed[i]);
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
void start_read(SnowflakeShared *shared) {
    int64 node_bits = shared->keys_read_pair_requested.exchange(kNoPairRequested);
    if (node_bits == kNoPairRequested) {
        const snowflake::NodeResult node =
            snowflake::make_node(snowflake_datacenter_id_setting, snowflake_machine_id_setting);
        node_bits = node.status == snowflake::CodecStatus::kOk ? node.node.bits : kUnsetNodeBits;
    }
    if (shared->beyond_key_hold.exchange(-1) >= 0) {
        const PairBit bit = pair_bit(shared->beyond_hold_node_bits.load());
        shared->keys_read_pairs[bit.word].fetch_and(~bit.mask);
        shared->keys_hold_dropped.store(true);
    }
    SpinLockAcquire(&shared->keys_floor_lock);
    shared->beyond_key = -1;
    shared->beyond_key_columns = 0;
    shared->beyond_key_source[0] = '\0';
    SpinLockRelease(&shared->keys_floor_lock);
    shared->key_window_end_ms.store(snowflake::key_window_end(
        snowflake_wall_clock_unix_ms(), snowflake_key_floor_max_lead_setting));
    shared->keys_read_node_bits.store(node_bits);
}

// Ends the read: a key beyond the window, if any, stops generation from now on, and the calls
// that wait may go on.
void finish_read(SnowflakeShared *shared, int databases, TimestampTz started) {
    SpinLockAcquire(&shared->keys_floor_lock);
    const int64 beyond_key = shared->beyond_key;
    const uint32_t beyond_columns = shared->beyond_key_columns;
    char beyond_source[kKeySourceBytes];
    strlcpy(beyond_source, shared->beyond_key_source, sizeof(beyond_source));
    SpinLockRelease(&shared->keys_floor_lock);
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
        shared->beyond_hold_node_bits.store(shared->keys_read_node_bits.load());
        shared->beyond_key_hold.store(beyond_key);
        ereport(WARNING,
                (errmsg("snowflake: key %lld of %s is beyond snowflake.key_floor_max_lead: "
                        "generation stops until the clock passes it or a superuser releases it",
                        static_cast<long long>(beyond_key), beyond_source),
                 errdetail("%u columns hold keys of this server's node pair beyond the bound; the "
                           "lines above name each.",
                           beyond_columns),
                 errhint("If the clock is right, give the rows another key or delete them, then "
                         "run SELECT snowflake_release_key(%lld); if the clock is behind, fix it.",
                         static_cast<long long>(beyond_key))));
    } else if (shared->keys_read_node_bits.load() != kUnsetNodeBits &&
               !shared->keys_hold_dropped.load()) {
        remove_keys_unchecked_file();
    }
    if (shared->keys_read_node_bits.load() != kUnsetNodeBits) {
        const PairBit bit = pair_bit(shared->keys_read_node_bits.load());
        shared->keys_read_pairs[bit.word].fetch_or(bit.mask);
    }
    ereport(LOG, (errmsg("snowflake: the stored keys of %d databases were read in %ld ms after a "
                         "start without the mark file; ids are issued from now on",
                         databases, elapsed_ms)));
    shared->keys_floor_pending.store(false);
    ConditionVariableBroadcast(&shared->keys_read_changed);
}

// Why a call may not wait for the read: a single-user backend has no background workers.
void refuse_without_postmaster() {
    if (IsUnderPostmaster) {
        return;
    }
    ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                    errmsg("Snowflake ids cannot be generated in single-user mode after a start "
                           "without the mark file"),
                    errdetail("No id is issued until a background worker has read the stored "
                              "keys of every database, and single-user mode runs none."),
                    errhint("Start the server normally.")));
}

// A waiting call asks for a reader when none has claimed the read a second after the floor was
// armed (after a crash re-initialisation or a change of the node ids, the one registered at start
// has ended already, and a reader ended by pg_terminate_backend() is not restarted).
void request_reader(SnowflakeShared *shared) {
    if (shared->keys_reader_claimed.load() || shared->keys_reader_requested.exchange(true)) {
        return;
    }
    BackgroundWorker worker = keys_reader_worker(InvalidOid);
    worker.bgw_restart_time = BGW_NEVER_RESTART;
    if (!RegisterDynamicBackgroundWorker(&worker, nullptr)) {
        shared->keys_reader_requested.store(false);
        ereport(ERROR,
                (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                 errmsg("could not start the background worker that reads the stored keys after a "
                        "start without the mark file"),
                 errdetail("No id is issued until it has read the keys of every database; no "
                           "background worker slot is free."),
                 errhint("Raise max_worker_processes and restart the server, or end other "
                         "background workers, then call again.")));
    }
}

// A call while a database's read fails: the read goes on being retried, the call says why it
// cannot wait for it.
void refuse_while_read_fails(SnowflakeShared *shared) {
    char failure[kReadFailureBytes];
    SpinLockAcquire(&shared->keys_floor_lock);
    strlcpy(failure, shared->keys_read_failure, sizeof(failure));
    SpinLockRelease(&shared->keys_floor_lock);
    if (failure[0] == '\0') {
        return;
    }
    ConditionVariableCancelSleep();
    ereport(ERROR,
            (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
             errmsg("Snowflake id generation waits for the stored keys to be read after a start "
                    "without the mark file, and the read failed"),
             errdetail("%s.", failure),
             errhint("Fix the cause the server log gives; the read is retried every %ld s, and "
                     "ids are issued once the keys of every database were read.",
                     kRetryMs / 1000)));
}

// A key beyond the window stops generation until the clock leaves its millisecond; from then on
// the generator is raised through it, so that a clock that steps back again cannot reach it, and
// the key is let go as if released.
void refuse_while_beyond_key_stops(SnowflakeShared *shared, snowflake::Node node) {
    const int64 key = shared->beyond_key_hold.load();
    if (key < 0 || shared->beyond_hold_node_bits.load() != node.bits) {
        return;
    }
    const int64 now_unix_ms = snowflake_wall_clock_unix_ms();
    if (!snowflake::beyond_key_stops_generation(key, now_unix_ms)) {
        snowflake_raise_generator_through(shared, snowflake::unix_ms_of_key(key));
        int64 held = key;
        if (shared->beyond_key_hold.compare_exchange_strong(held, -1)) {
            remove_keys_unchecked_file();
        }
        return;
    }
    char source[kKeySourceBytes];
    SpinLockAcquire(&shared->keys_floor_lock);
    strlcpy(source, shared->beyond_key_source, sizeof(source));
    const uint32_t columns = shared->beyond_key_columns;
    SpinLockRelease(&shared->keys_floor_lock);
    char until_text[MAXDATELEN + 1];
    strlcpy(until_text,
            timestamptz_to_str(snowflake::pg_us_from_unix_ms(snowflake::unix_ms_of_key(key))),
            sizeof(until_text));
    ereport(ERROR,
            (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
             errmsg("a stored key %lld ms ahead of the clock stops Snowflake id generation",
                    static_cast<long long>(snowflake::unix_ms_of_key(key) - now_unix_ms)),
             errdetail("After a start without the mark file, ids stay above the stored keys of "
                       "this server's node pair. Key %lld of %s is further ahead than "
                       "snowflake.key_floor_max_lead (%d ms) allows to wait for; %u columns hold "
                       "such keys, and the server log names each.",
                       static_cast<long long>(key), source, snowflake_key_floor_max_lead_setting,
                       columns),
             errhint("If the clock is behind, fix it: generation resumes once it passes %s. If the "
                     "clock is right, this server did not issue the key: a superuser gives the "
                     "row another key or deletes it, then runs SELECT snowflake_release_key(%lld) "
                     "(doc/operations.md \"Upgrading PostgreSQL\").",
                     until_text, static_cast<long long>(key))));
}

// The keys a read found are those of the pair it was for: a call with a pair that no read since
// the start was for (a reload set another, or set one where none was) asks for a read of its own.
void request_read_of(SnowflakeShared *shared, snowflake::Node node) {
    if (shared->keys_floor_pending.load()) {
        return;
    }
    shared->keys_read_pair_requested.store(node.bits);
    shared->keys_floor_armed_at.store(GetCurrentTimestamp());
    bool pending = false;
    if (shared->keys_floor_pending.compare_exchange_strong(pending, true)) {
        create_keys_unchecked_file();
        request_reader(shared);
        ereport(LOG, (errmsg("snowflake: the stored keys are read for node pair (%lld, %lld), "
                             "which no read since the start was for, before its next id",
                             static_cast<long long>(node.bits >> snowflake::kDatacenterShift) &
                                 snowflake::kMaxDatacenterId,
                             static_cast<long long>(node.bits >> snowflake::kMachineShift) &
                                 snowflake::kMaxMachineId)));
    }
}

}  // namespace

void snowflake_arm_keys_floor(SnowflakeShared *shared, bool mark_file_missing) {
    shared->keys_floor_armed_at.store(GetCurrentTimestamp());
    if (mark_file_missing) {
        create_keys_unchecked_file();
        shared->keys_floor_armed.store(true, std::memory_order_relaxed);
        shared->keys_floor_pending.store(true, std::memory_order_relaxed);
        ereport(LOG,
                (errmsg("snowflake mark file \"%s\" not found", kMarkFileName),
                 errdetail("This is expected at the first start of a new data directory. After "
                           "pg_upgrade, a restore without the file or its removal, the highest "
                           "id this server issued is unknown: no id is issued until a background "
                           "worker has read the stored keys of this server's node pair in every "
                           "database, after this start and every next one until one read of "
                           "them all has ended.")));
        return;
    }
    if (access(kKeysUncheckedFileName, F_OK) == 0) {
        shared->keys_floor_armed.store(true, std::memory_order_relaxed);
        shared->keys_floor_pending.store(true, std::memory_order_relaxed);
        ereport(LOG, (errmsg("snowflake: \"%s\" is present: no id is issued until the stored keys "
                             "of every database were read, since no read of them all has ended "
                             "since the mark file was lost",
                             kKeysUncheckedFileName)));
    }
}

void snowflake_register_keys_reader() {
    BackgroundWorker worker = keys_reader_worker(InvalidOid);
    RegisterBackgroundWorker(&worker);
}

// The reader: one per start at most, and none in pg_upgrade's runs of the new cluster, whose
// databases it would hold up and whose tables are not there yet.
void snowflake_keys_reader_main(Datum) {
    pqsignal(SIGTERM, die);
    BackgroundWorkerUnblockSignals();
    SnowflakeShared *shared = snowflake_shared;
    if (shared == nullptr || IsBinaryUpgrade || !shared->keys_floor_pending.load() ||
        shared->keys_reader_claimed.exchange(true)) {
        proc_exit(0);
    }
    before_shmem_exit(release_reader_claim, 0);
    BackgroundWorkerInitializeConnection(nullptr, nullptr, 0);
    BecomeLockGroupLeader();
    pgstat_report_activity(STATE_RUNNING, "reading the stored keys of every database");
    const TimestampTz started = GetCurrentTimestamp();
    start_read(shared);
    const int count =
        shared->keys_read_node_bits.load() != kUnsetNodeBits ? read_every_database(shared) : 0;
    finish_read(shared, count, started);
    proc_exit(0);
}

// One database's reader: connected as the bootstrap superuser, also where connections are not
// allowed. A failure is recorded for the waiting calls, then ends the worker as any error would.
void snowflake_database_keys_reader_main(Datum main_arg) {
    pqsignal(SIGTERM, die);
    BackgroundWorkerUnblockSignals();
    SnowflakeShared *shared = snowflake_shared;
    const Oid database = DatumGetObjectId(main_arg);
    PGPROC *reader = nullptr;
    memcpy(&reader, MyBgworkerEntry->bgw_extra, sizeof(reader));
    // Before the connection's lock on the database, which the group then holds (see Locking).
    if (!BecomeLockGroupMember(reader, MyBgworkerEntry->bgw_notify_pid)) {
        proc_exit(0);
    }
    BackgroundWorkerInitializeConnectionByOid(database, InvalidOid, BGWORKER_BYPASS_ALLOWCONN);
    for (const auto &setting : kReaderSettings) {
        SetConfigOption(setting[0], setting[1], PGC_SUSET, PGC_S_OVERRIDE);
    }
    snowflake_reset_transaction_timeout();
    pgstat_report_activity(STATE_RUNNING, "reading the stored keys of this database");
    SetCurrentStatementStartTimestamp();
    StartTransactionCommand();
    PushActiveSnapshot(GetTransactionSnapshot());
    // Looked up now: after an error, the catalog may not be read.
    const char *database_name = MemoryContextStrdup(TopMemoryContext, get_database_name(database));
    const int64 now_unix_ms = snowflake_wall_clock_unix_ms();
    const snowflake::KeyWindow window =
        snowflake::key_window(now_unix_ms, shared->key_window_end_ms.load(),
                              snowflake::Node{shared->keys_read_node_bits.load()});
    PG_TRY();
    {
        const DatabaseKeys keys = snowflake_read_database_keys(window);
        apply_database_keys(shared, keys, window, now_unix_ms);
    }
    PG_CATCH();
    {
        MemoryContextSwitchTo(TopMemoryContext);
        const ErrorData *error = CopyErrorData();
        record_read_failure(shared,
                            psprintf("reading database \"%s\": %s", database_name, error->message));
        PG_RE_THROW();
    }
    PG_END_TRY();
    PopActiveSnapshot();
    CommitTransactionCommand();
    SpinLockAcquire(&shared->keys_floor_lock);
    shared->last_read_database = database;
    SpinLockRelease(&shared->keys_floor_lock);
    proc_exit(0);
}

void snowflake_await_keys_floor(SnowflakeShared *shared, snowflake::Node node) {
    if (!shared->keys_floor_armed.load()) {
        return;
    }
    bool waited = false;
    for (;;) {
        if (!shared->keys_floor_pending.load()) {
            if (pair_was_read(shared, node.bits)) {
                break;
            }
            request_read_of(shared, node);
        }
        refuse_without_postmaster();
        // Before a failure is reported: the reader that recorded it may have been ended since.
        if (GetCurrentTimestamp() >=
            shared->keys_floor_armed_at.load() + kReaderClaimWaitMs * 1000) {
            request_reader(shared);
        }
        refuse_while_read_fails(shared);
        (void)ConditionVariableTimedSleep(&shared->keys_read_changed, kReaderClaimWaitMs,
                                          snowflake_wait_event("SnowflakeKeysRead"));
        waited = true;
    }
    if (waited) {
        ConditionVariableCancelSleep();
    }
    refuse_while_beyond_key_stops(shared, node);
}

bool snowflake_keys_floor_holds_generation(SnowflakeShared *shared) {
    const int64 key_floor_ms = shared->key_floor_ms.load();
    const snowflake::LastIssued last = snowflake::last_issued(shared->generator);
    const bool held_by_key = key_floor_ms != 0 && last.any && last.unix_ms == key_floor_ms;
    if (!held_by_key && shared->beyond_key_hold.load() < 0 && !shared->keys_floor_pending.load() &&
        !shared->keys_hold_dropped.load()) {
        return false;
    }
    create_keys_unchecked_file();
    return true;
}

void snowflake_describe_key_floor(const SnowflakeShared *shared, int64 *key, char *source,
                                  size_t source_size) {
    SnowflakeShared *writable = const_cast<SnowflakeShared *>(shared);
    SpinLockAcquire(&writable->keys_floor_lock);
    *key = shared->key_floor_key;
    strlcpy(source, shared->key_floor_source, source_size);
    SpinLockRelease(&writable->keys_floor_lock);
}

// A superuser's way to resume generation that a key beyond the window stops, when the clock is
// right: the release is logged with who released which key.
Datum snowflake_release_key(PG_FUNCTION_ARGS) {
    SnowflakeShared *shared = snowflake_shared;
    if (shared == nullptr) {
        snowflake_report_not_preloaded("The keys that stop generation are kept in shared memory.");
    }
    const int64 key = PG_GETARG_INT64(0);
    int64 held = shared->beyond_key_hold.load();
    if (key < 0 || held != key || !shared->beyond_key_hold.compare_exchange_strong(held, -1)) {
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("key %lld does not stop Snowflake id generation",
                               static_cast<long long>(key)),
                        held >= 0 ? errdetail("Key %lld does.", static_cast<long long>(held))
                                  : errdetail("No stored key stops generation."),
                        errhint("Release the key that the refusal of snowflake_nextval() "
                                "names.")));
    }
    char source[kKeySourceBytes];
    SpinLockAcquire(&shared->keys_floor_lock);
    strlcpy(source, shared->beyond_key_source, sizeof(source));
    SpinLockRelease(&shared->keys_floor_lock);
    remove_keys_unchecked_file();
    ereport(LOG,
            (errmsg("snowflake: key %lld of %s was released by role \"%s\" (session user \"%s\"); "
                    "it no longer stops generation",
                    static_cast<long long>(key), source, GetUserNameFromId(GetUserId(), false),
                    GetUserNameFromId(GetSessionUserId(), false)),
             errdetail("This server issues an id equal to it when its clock reaches %s, unless "
                       "the row has another key by then; so does it for every other key beyond "
                       "snowflake.key_floor_max_lead that the read found.",
                       timestamptz_to_str(
                           snowflake::pg_us_from_unix_ms(snowflake::unix_ms_of_key(key))))));
    PG_RETURN_VOID();
}
