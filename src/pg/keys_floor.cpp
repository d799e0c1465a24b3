// The floor from keys: after a start without a mark file (pg_upgrade, a restore without the file,
// its removal), the highest timestamp this server issued is unknown. The first
// snowflake_nextval() in each database then raises the generator above the stored keys of this
// server's node pair that are ahead of the clock (core/key_floor.hpp says which), read from every
// table that holds keys of a column whose default calls it: the column's own default, its type's
// (a domain's) or an ancestor's (partitions, sub-partitions and inheritance children take their
// keys from their parent). A file in the data directory keeps the check armed across restarts
// until every database that takes connections has been checked in one run.
// doc/operations.md "Upgrading PostgreSQL" and "Guarantees" say what it covers and why.
//
// The tables are read as the bootstrap superuser in a security-restricted operation with
// search_path pinned: no privilege, row-level security policy or ownership can hide a key or
// fail the read, and a max() of a plain column runs no code of any role. A table whose lock
// cannot be had in a short time counts as holding keys up to the end of the window.
//
// Locking. keys_floor_pending is set at start-up and cleared by the one backend that finds every
// database checked. keys_floor_lock (a spinlock) guards the list of databases already checked and
// the record of the key that holds generation back, for a few copies at a time; the reads
// themselves run without it, so two backends of one database may both read, which only raises
// the floor twice to the same value.

#include <fcntl.h>
#include <unistd.h>

extern "C" {
#include "postgres.h"

#include "catalog/pg_authid.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/fd.h"
#include "storage/latch.h"
#include "storage/lmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"
}

#include <algorithm>
#include <type_traits>

#include "core/codec.hpp"
#include "core/generator.hpp"
#include "core/key_floor.hpp"
#include "pg/compat.hpp"
#include "pg/durable_mark.hpp"
#include "pg/keys_floor.hpp"
#include "pg/settings.hpp"
#include "pg/shared_state.hpp"

namespace {

// Present while some database may still hold keys above what the generator knows of.
constexpr char kKeysUncheckedFileName[] = "snowflake_keys_unchecked";

// How long a read waits for a table that another session holds locked before it counts the table
// as holding keys up to the end of the window.
constexpr long kTableLockWaitMs = 1000;

// How many of the highest keys beyond the window are looked at for one of this server's pair, to
// report: enough for any real table, and a bound on the time a table full of others' keys costs.
constexpr int kKeysBeyondWindowLooked = 1000;

// The tables that hold keys of a bigint column (or a domain over bigint) whose default calls
// snowflake_nextval(): its own default, its type's, or an ancestor's, down every level of
// partitions and inheritance children (which have no storage when partitioned, and are read
// each on its own otherwise). A foreign table lives elsewhere and another session's temporary
// table cannot be read. Each row: the table and the column. Run with search_path pinned.
constexpr char kKeyTablesQuery[] =
    "WITH RECURSIVE key_column (relid, attname) AS ("
    " SELECT def.adrelid, a.attname FROM pg_catalog.pg_depend AS dep"
    " JOIN pg_catalog.pg_attrdef AS def ON def.oid = dep.objid"
    " JOIN pg_catalog.pg_attribute AS a ON a.attrelid = def.adrelid AND a.attnum = def.adnum"
    " WHERE dep.classid = 'pg_catalog.pg_attrdef'::pg_catalog.regclass"
    " AND dep.refclassid = 'pg_catalog.pg_proc'::pg_catalog.regclass AND dep.refobjid = $1"
    " UNION"
    " SELECT a.attrelid, a.attname FROM pg_catalog.pg_depend AS dep"
    " JOIN pg_catalog.pg_attribute AS a ON a.atttypid = dep.objid"
    " WHERE dep.classid = 'pg_catalog.pg_type'::pg_catalog.regclass"
    " AND dep.refclassid = 'pg_catalog.pg_proc'::pg_catalog.regclass AND dep.refobjid = $1"
    " AND a.attnum > 0 AND NOT a.attisdropped"
    " UNION"
    " SELECT i.inhrelid, k.attname FROM key_column AS k"
    " JOIN pg_catalog.pg_inherits AS i ON i.inhparent = k.relid)"
    "SELECT c.oid, k.attname FROM key_column AS k"
    " JOIN pg_catalog.pg_class AS c ON c.oid = k.relid"
    " JOIN pg_catalog.pg_attribute AS a ON a.attrelid = c.oid AND a.attname = k.attname"
    " AND NOT a.attisdropped"
    " JOIN pg_catalog.pg_type AS t ON t.oid = a.atttypid"
    " WHERE c.relkind = 'r' AND c.relpersistence <> 't'"
    " AND 'pg_catalog.int8'::pg_catalog.regtype IN (t.oid, t.typbasetype)"
    " ORDER BY c.oid, k.attname";

// The highest key of this server's pair in the window; an index on the key answers it from the
// window's end downwards. $1, $2: the window; $3: the node fields' mask; $4: this server's.
constexpr char kHighestKeyInWindowQuery[] =
    "SELECT pg_catalog.max(%1$s) FROM ONLY %2$s WHERE %1$s OPERATOR(pg_catalog.>=) $1"
    " AND %1$s OPERATOR(pg_catalog.<=) $2"
    " AND (%1$s OPERATOR(pg_catalog.&) $3) OPERATOR(pg_catalog.=) $4";

// The highest key of this server's pair among the highest keys beyond the window, for the log.
// $1: the window's end; $2, $3: as $3, $4 above; the limit is kKeysBeyondWindowLooked.
constexpr char kHighestKeyBeyondWindowQuery[] =
    "SELECT pg_catalog.max(beyond.key) FROM (SELECT %1$s AS key FROM ONLY %2$s"
    " WHERE %1$s OPERATOR(pg_catalog.>) $1 ORDER BY %1$s DESC LIMIT %3$d) AS beyond"
    " WHERE (beyond.key OPERATOR(pg_catalog.&) $2) OPERATOR(pg_catalog.=) $3";

// The databases that take connections, other than templates, and are not in the checked list.
constexpr char kUncheckedDatabasesQuery[] =
    "SELECT pg_catalog.count(*) FROM pg_catalog.pg_database "
    "WHERE datallowconn AND NOT datistemplate AND oid <> ALL ($1)";

// Whether another backend already checked this database since the start.
bool database_already_checked(SnowflakeShared *shared) {
    SpinLockAcquire(&shared->keys_floor_lock);
    const Oid *first = shared->checked_databases;
    const Oid *last = first + shared->checked_database_count;
    const bool found = std::find(first, last, MyDatabaseId) != last;
    SpinLockRelease(&shared->keys_floor_lock);
    return found;
}

// Once the list is full, every backend of a database not on it reads for itself: slower, still
// correct. Returns a copy of the list, for the question whether any database is left.
ArrayType *remember_database_checked(SnowflakeShared *shared) {
    Datum checked[kMaxCheckedDatabases];
    SpinLockAcquire(&shared->keys_floor_lock);
    const Oid *first = shared->checked_databases;
    if (std::find(first, first + shared->checked_database_count, MyDatabaseId) ==
            first + shared->checked_database_count &&
        shared->checked_database_count < kMaxCheckedDatabases) {
        shared->checked_databases[shared->checked_database_count++] = MyDatabaseId;
    }
    const uint32_t count = shared->checked_database_count;
    for (uint32_t i = 0; i < count; i++) {
        checked[i] = ObjectIdGetDatum(shared->checked_databases[i]);
    }
    SpinLockRelease(&shared->keys_floor_lock);
    return construct_array_builtin(checked, static_cast<int>(count), OIDOID);
}

// Runs a one-value query and returns its bigint result, or -1 for NULL.
int64 query_bigint(const char *statement, int argument_count, Oid *argument_types,
                   Datum *arguments) {
    if (SPI_execute_with_args(statement, argument_count, argument_types, arguments, nullptr, true,
                              1) != SPI_OK_SELECT ||
        SPI_processed != 1) {
        elog(ERROR, "snowflake: could not run: %s", statement);
    }
    bool is_null = true;
    const Datum highest = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &is_null);
    return is_null ? -1 : DatumGetInt64(highest);
}

// Names the table whose read failed, for an error raised inside it.
void probe_error_context(void *table) {
    errcontext(
        "snowflake: reading the keys of %s after a start without the mark file "
        "(doc/operations.md \"Upgrading PostgreSQL\")",
        static_cast<const char *>(table));
}

// Takes the lock a read takes anyway, waiting a short, cancellable while for a session that
// holds the table locked (a rewrite, or a role that keeps its own table locked to stall others).
bool lock_table_briefly(Oid table) {
    for (long waited_ms = 0;; waited_ms += 10) {
        if (ConditionalLockRelationOid(table, AccessShareLock)) {
            return true;
        }
        if (waited_ms >= kTableLockWaitMs) {
            return false;
        }
        (void)WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 10,
                        PG_WAIT_EXTENSION);
        ResetLatch(MyLatch);
        CHECK_FOR_INTERRUPTS();
    }
}

// What the reads of one database found. The text fields live in result_context, the caller's
// memory context, since the reads' own context ends with SPI_finish.
struct KeyProbe {
    MemoryContext result_context;
    int tables;
    int64 highest_key;       // of this server's pair in the window, or -1
    const char *key_source;  // where it is stored: table and column
    const char *locked_out;  // a table that could not be read in time, or null
};

static_assert(std::is_trivially_destructible_v<KeyProbe>,
              "a probe's result lives across ereport calls and must own nothing");

// Logs a key of this server's pair that is too far ahead to raise the generator: if the clock is
// right, this server did not issue it, and it would issue an id equal to it later.
void report_key_beyond_window(int64 key, const char *source, int64 now_unix_ms) {
    const snowflake::DecodeResult decoded = snowflake::decode(key);
    ereport(LOG,
            (errmsg("snowflake: key %lld of %s is %lld ms ahead of the clock, beyond "
                    "snowflake.key_floor_max_lead (%d ms); it is left out of the generator's "
                    "floor",
                    static_cast<long long>(key), source,
                    static_cast<long long>(decoded.parts.unix_ms - now_unix_ms),
                    snowflake_key_floor_max_lead_setting),
             errhint("It carries this server's node pair, so this server issues an id equal to "
                     "it when its clock reaches %s. If the clock is right, give the row another "
                     "key; if the clock is behind, fix it.",
                     timestamptz_to_str(snowflake::pg_us_from_unix_ms(decoded.parts.unix_ms)))));
}

// Reads one table's keys of this server's pair: the highest in the window, and, for the log, one
// beyond it.
void probe_table(Oid table, const char *column_name, const snowflake::KeyWindow &window,
                 int64 now_unix_ms, KeyProbe *probe) {
    // The name before the lock, for a table that cannot be locked; again after it, since a
    // table renamed or dropped in between is what the lock now shows.
    const char *relation_name = get_rel_name(table);
    if (relation_name == nullptr) {
        return;
    }
    if (!lock_table_briefly(table)) {
        probe->locked_out = MemoryContextStrdup(
            probe->result_context,
            psprintf("table %s", quote_qualified_identifier(
                                     get_namespace_name(get_rel_namespace(table)), relation_name)));
        return;
    }
    relation_name = get_rel_name(table);
    if (relation_name == nullptr) {
        UnlockRelationOid(table, AccessShareLock);
        return;
    }
    const char *table_name =
        quote_qualified_identifier(get_namespace_name(get_rel_namespace(table)), relation_name);
    const char *column = quote_identifier(column_name);
    const char *source = psprintf("column %s of table %s in database \"%s\"", column, table_name,
                                  get_database_name(MyDatabaseId));
    ErrorContextCallback context{error_context_stack, probe_error_context,
                                 const_cast<char *>(table_name)};
    error_context_stack = &context;
    Oid window_types[4] = {INT8OID, INT8OID, INT8OID, INT8OID};
    Datum window_arguments[4] = {Int64GetDatum(window.lowest_id), Int64GetDatum(window.highest_id),
                                 Int64GetDatum(snowflake::kNodeFieldsMask),
                                 Int64GetDatum(window.node_fields)};
    const int64 highest = query_bigint(psprintf(kHighestKeyInWindowQuery, column, table_name), 4,
                                       window_types, window_arguments);
    if (highest > probe->highest_key) {
        probe->highest_key = highest;
        probe->key_source = MemoryContextStrdup(probe->result_context, source);
    }
    const int64 beyond = query_bigint(
        psprintf(kHighestKeyBeyondWindowQuery, column, table_name, kKeysBeyondWindowLooked), 3,
        window_types, window_arguments + 1);
    if (beyond >= 0) {
        report_key_beyond_window(beyond, source, now_unix_ms);
    }
    error_context_stack = context.previous;
    probe->tables++;
}

// Every table of this database that holds keys of snowflake_nextval(), read once each.
KeyProbe probe_keys(Oid nextval_oid, const snowflake::KeyWindow &window, int64 now_unix_ms) {
    KeyProbe probe{CurrentMemoryContext, 0, -1, nullptr, nullptr};
    SPI_connect();
    Oid oid_type[1] = {OIDOID};
    Datum nextval_argument[1] = {ObjectIdGetDatum(nextval_oid)};
    if (SPI_execute_with_args(kKeyTablesQuery, 1, oid_type, nextval_argument, nullptr, true, 0) !=
        SPI_OK_SELECT) {
        elog(ERROR, "snowflake: could not list the tables that hold keys of snowflake_nextval()");
    }
    SPITupleTable *tables = SPI_tuptable;
    const uint64 table_count = SPI_processed;
    for (uint64 i = 0; i < table_count; i++) {
        bool is_null = true;
        const Oid table =
            DatumGetObjectId(SPI_getbinval(tables->vals[i], tables->tupdesc, 1, &is_null));
        const char *column = SPI_getvalue(tables->vals[i], tables->tupdesc, 2);
        probe_table(table, column, window, now_unix_ms, &probe);
    }
    SPI_finish();
    return probe;
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

// Once no database that takes connections is left unchecked, the mark file is trusted again. The
// one backend that clears the flag removes the file, so concurrent first calls do not race for it.
void disarm_if_all_checked(SnowflakeShared *shared, ArrayType *checked) {
    SPI_connect();
    Oid array_type[1] = {OIDARRAYOID};
    Datum checked_argument[1] = {PointerGetDatum(checked)};
    const int64 unchecked = query_bigint(kUncheckedDatabasesQuery, 1, array_type, checked_argument);
    SPI_finish();
    if (unchecked != 0 || !shared->keys_floor_pending.exchange(false)) {
        return;
    }
    if (unlink(kKeysUncheckedFileName) != 0 && errno != ENOENT) {
        shared->keys_floor_pending.store(true);
        ereport(LOG, (errcode_for_file_access(),
                      errmsg("could not remove file \"%s\": %m; the next start reads the keys "
                             "again",
                             kKeysUncheckedFileName)));
        return;
    }
    (void)fsync_fname_ext(".", true, false, LOG);
    ereport(LOG, (errmsg("snowflake: every database has been checked for keys; \"%s\" is "
                         "removed and the mark file is trusted again",
                         kKeysUncheckedFileName)));
}

// Creates the file that keeps the floor from keys armed across restarts.
void create_keys_unchecked_file() {
    const int fd = OpenTransientFile(kKeysUncheckedFileName, O_WRONLY | O_CREAT | PG_BINARY);
    if (fd < 0 || CloseTransientFile(fd) != 0 ||
        fsync_fname_ext(kKeysUncheckedFileName, false, false, LOG) != 0 ||
        fsync_fname_ext(".", true, false, LOG) != 0) {
        ereport(LOG, (errcode_for_file_access(),
                      errmsg("could not create \"%s\": %m; if the server restarts before "
                             "every database was checked, the check is not repeated",
                             kKeysUncheckedFileName)));
    }
}

}  // namespace

void snowflake_arm_keys_floor(SnowflakeShared *shared, bool mark_file_missing) {
    if (mark_file_missing) {
        create_keys_unchecked_file();
        shared->keys_floor_pending.store(true, std::memory_order_relaxed);
        ereport(LOG,
                (errmsg("snowflake mark file \"%s\" not found", kMarkFileName),
                 errdetail("This is expected at the first start of a new data directory. After "
                           "pg_upgrade, a restore without the file or its removal, the highest "
                           "id this server issued is unknown: the first snowflake_nextval() in "
                           "each database raises the generator above the stored keys of this "
                           "server's node pair, after this start and every next one until each "
                           "database has been checked.")));
        return;
    }
    if (access(kKeysUncheckedFileName, F_OK) == 0) {
        shared->keys_floor_pending.store(true, std::memory_order_relaxed);
        ereport(LOG, (errmsg("snowflake: \"%s\" is present: the first snowflake_nextval() in each "
                             "database raises the generator above its keys, since not every "
                             "database was checked after the mark file was lost",
                             kKeysUncheckedFileName)));
    }
}

// The catalog and the tables are read as the bootstrap superuser, in a security-restricted
// operation with search_path pinned; an error undoes both with the transaction.
void snowflake_check_database_keys(SnowflakeShared *shared, Oid nextval_oid, snowflake::Node node) {
    if (database_already_checked(shared)) {
        return;
    }
    const int64 now_unix_ms = snowflake::unix_ms_floor_from_pg_us(GetCurrentTimestamp());
    const snowflake::KeyWindow window =
        snowflake::key_window(now_unix_ms, snowflake_key_floor_max_lead_setting, node);
    Oid saved_user;
    int saved_security_context;
    GetUserIdAndSecContext(&saved_user, &saved_security_context);
    SetUserIdAndSecContext(BOOTSTRAP_SUPERUSERID, saved_security_context |
                                                      SECURITY_LOCAL_USERID_CHANGE |
                                                      SECURITY_RESTRICTED_OPERATION);
    const int guc_nest_level = NewGUCNestLevel();
    (void)set_config_option("search_path", "pg_catalog, pg_temp", PGC_SUSET, PGC_S_SESSION,
                            GUC_ACTION_SAVE, true, 0, false);
    const KeyProbe probe = probe_keys(nextval_oid, window, now_unix_ms);
    if (probe.locked_out != nullptr) {
        raise_floor_through(shared, window.last_unix_ms, -1, probe.locked_out, now_unix_ms);
    }
    raise_floor_through(shared,
                        snowflake::key_floor_through_ms(window, now_unix_ms, probe.highest_key),
                        probe.highest_key, probe.key_source, now_unix_ms);
    disarm_if_all_checked(shared, remember_database_checked(shared));
    AtEOXact_GUC(true, guc_nest_level);
    SetUserIdAndSecContext(saved_user, saved_security_context);

    const char *database = get_database_name(MyDatabaseId);
    if (probe.locked_out != nullptr) {
        ereport(WARNING,
                (errmsg("snowflake: %s in database \"%s\" was locked by another session for "
                        "over %ld ms, so its keys could not be read",
                        probe.locked_out, database, kTableLockWaitMs),
                 errdetail("Ids are held back until %d ms from now, the furthest ahead a key of "
                           "this server may raise the generator (snowflake.key_floor_max_lead).",
                           snowflake_key_floor_max_lead_setting),
                 errhint("Generation resumes by itself then. Find the session that holds the "
                         "lock in pg_locks.")));
    }
    if (probe.highest_key < 0) {
        ereport(LOG, (errmsg("snowflake: no key of this server's node pair ahead of the clock in "
                             "database \"%s\" (%d tables read)",
                             database, probe.tables)));
    } else {
        const snowflake::DecodeResult decoded = snowflake::decode(probe.highest_key);
        ereport(
            LOG,
            (errmsg("snowflake: raised the generator above key %lld of %s",
                    static_cast<long long>(probe.highest_key), probe.key_source),
             errdetail("It is the highest key of this server's node pair ahead of the clock "
                       "in %d tables; its timestamp is %s. Ids issued from now on are above "
                       "it.",
                       probe.tables,
                       timestamptz_to_str(snowflake::pg_us_from_unix_ms(decoded.parts.unix_ms)))));
    }
}

bool snowflake_keys_floor_holds_generation(SnowflakeShared *shared) {
    const int64 key_floor_ms = shared->key_floor_ms.load();
    const snowflake::LastIssued last = snowflake::last_issued(shared->generator);
    if (key_floor_ms == 0 || !last.any || last.unix_ms != key_floor_ms) {
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
