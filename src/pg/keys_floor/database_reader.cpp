// The worker that reads one database's stored keys for the reader (keys_readers.cpp describes the
// processes and the locking): it raises the generator above the keys ahead of the clock within
// the window, and records the highest key beyond it for the end of the read.

extern "C" {
#include "postgres.h"

#include "access/xact.h"
#include "commands/dbcommands.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "storage/proc.h"
#include "storage/spin.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

PGDLLEXPORT void snowflake_database_keys_reader_main(Datum);
}

#include "core/generator.hpp"
#include "core/key_floor.hpp"
#include "core/mark_rules.hpp"
#include "pg/clock.hpp"
#include "pg/compat.hpp"
#include "pg/keys_floor/keys_floor_parts.hpp"
#include "pg/keys_floor/keys_read.hpp"
#include "pg/mark/mark.hpp"
#include "pg/shared_state.hpp"

namespace {

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

// Raises the generator through a millisecond and, for a key ahead of the clock, records which key
// it was, so that a refusal can name it; the later of two records wins.
void raise_floor_through(SnowflakeShared *shared, int64 through_ms, int64 key, const char *source,
                         int64 now_unix_ms) {
    KeysFloorState &floor = shared->keys_floor;
    const snowflake::LastIssued last = snowflake::last_issued(shared->generator);
    if (last.any && last.unix_ms >= through_ms) {
        return;
    }
    if (through_ms >= now_unix_ms && through_ms > floor.floor_ms.load()) {
        SpinLockAcquire(&floor.lock);
        floor.floor_key = key;
        strlcpy(floor.floor_source, source, sizeof(floor.floor_source));
        SpinLockRelease(&floor.lock);
        floor.floor_ms.store(through_ms);
    }
    snowflake_raise_generator(shared, through_ms, GeneratorRaise::kLease);
}

// Keeps the highest key beyond the window that any database holds, and how many keys and columns
// hold one, for the end of the read.
void record_beyond_window(KeysFloorState &floor, const DatabaseKeys &keys) {
    if (keys.beyond_window < 0) {
        return;
    }
    SpinLockAcquire(&floor.lock);
    floor.beyond_columns += static_cast<uint32_t>(keys.beyond_window_columns);
    floor.beyond_keys += keys.beyond_window_keys;
    if (keys.beyond_window > floor.beyond_key) {
        floor.beyond_key = keys.beyond_window;
        strlcpy(floor.beyond_source, keys.beyond_window_source, sizeof(floor.beyond_source));
    }
    SpinLockRelease(&floor.lock);
}

// Applies what the read of the connected database found: the generator is raised above its keys
// in the window, and its highest key beyond the window is kept for the end of the read.
void apply_database_keys(SnowflakeShared *shared, const DatabaseKeys &keys,
                         const snowflake::KeyWindow &window, int64 now_unix_ms) {
    const char *database = get_database_name(MyDatabaseId);
    raise_floor_through(shared,
                        snowflake::key_floor_through_ms(window, now_unix_ms, keys.in_window),
                        keys.in_window, keys.in_window_source, now_unix_ms);
    record_beyond_window(shared->keys_floor, keys);
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

}  // namespace

// One database's reader: connected as the bootstrap superuser, also where connections are not
// allowed. A failure is recorded for the waiting calls, then ends the worker as any error would.
void snowflake_database_keys_reader_main(Datum main_arg) {
    pqsignal(SIGTERM, die);
    BackgroundWorkerUnblockSignals();
    SnowflakeShared *shared = snowflake_shared;
    KeysFloorState &floor = shared->keys_floor;
    const Oid database = DatumGetObjectId(main_arg);
    PGPROC *reader = nullptr;
    memcpy(&reader, MyBgworkerEntry->bgw_extra, sizeof(reader));
    // Before the connection's lock on the database, which the group then holds (keys_readers.cpp,
    // "Locking").
    if (!BecomeLockGroupMember(reader, MyBgworkerEntry->bgw_notify_pid)) {
        proc_exit(0);
    }
    BackgroundWorkerInitializeConnectionByOid(database, InvalidOid, BGWORKER_BYPASS_ALLOWCONN);
    for (const auto &setting : kReaderSettings) {
        SetConfigOption(setting[0], setting[1], PGC_SUSET, PGC_S_OVERRIDE);
    }
    snowflake_reset_transaction_timeout(PGC_S_OVERRIDE);
    pgstat_report_activity(STATE_RUNNING, "reading the stored keys of this database");
    SetCurrentStatementStartTimestamp();
    StartTransactionCommand();
    PushActiveSnapshot(GetTransactionSnapshot());
    // Looked up now: after an error, the catalog may not be read.
    const char *database_name = MemoryContextStrdup(TopMemoryContext, get_database_name(database));
    const int64 now_unix_ms = snowflake_wall_clock_unix_ms();
    const snowflake::KeyWindow window = snowflake::key_window(
        now_unix_ms, floor.window_end_ms.load(), snowflake::Node{floor.read_node_bits.load()});
    PG_TRY();
    {
        // Every stored key is before a clock past the layout, which would raise the generator
        // through its end: the read fails, naming the clock, and is retried.
        if (!snowflake::clock_in_layout(now_unix_ms)) {
            snowflake_report_clock_out_of_range(now_unix_ms);
        }
        const DatabaseKeys keys = snowflake_read_database_keys(window);
        apply_database_keys(shared, keys, window, now_unix_ms);
    }
    PG_CATCH();
    {
        MemoryContextSwitchTo(TopMemoryContext);
        const ErrorData *error = CopyErrorData();
        snowflake_record_read_failure(
            floor, psprintf("reading database \"%s\": %s", database_name, error->message));
        PG_RE_THROW();
    }
    PG_END_TRY();
    PopActiveSnapshot();
    CommitTransactionCommand();
    SpinLockAcquire(&floor.lock);
    floor.last_read_database = database;
    SpinLockRelease(&floor.lock);
    proc_exit(0);
}
