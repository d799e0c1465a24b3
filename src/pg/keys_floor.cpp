// The floor from keys: after a start without a mark file (pg_upgrade, a restore without the file,
// its removal), the highest timestamp this server issued is unknown. The first
// snowflake_nextval() in each database then raises the generator above the stored keys of this
// server's node pair that are ahead of the clock, up to the end of a window that the first read
// after the start fixes (core/key_floor.hpp says which), read from every column that may hold
// keys: one whose default calls it (its own default, its type's, or an ancestor's, since
// partitions, sub-partitions and inheritance children take their keys from their parent) and
// every bigint or snowflake column that leads a btree index (a table keeps its keys when its
// default goes). A file in the data directory keeps the check armed across restarts until every
// database that takes connections has been checked in one run.
// doc/operations.md "Upgrading PostgreSQL" and "Guarantees" say what it covers and why.
//
// The keys are read without the planner or the executor: an index scan of a btree index led by
// the column, or a scan of the table, with a dirty snapshot (so that rows of transactions in
// progress or prepared count too). So no privilege, row-level security policy, index predicate or
// expression, statistics object or trigger of any role runs or is consulted, and none can hide a
// key or fail the read. Each table is locked only while it is read. Lock waits share one short,
// cancellable budget; a table (or its index) locked past it counts as holding keys up to the end
// of the window, which bounds how long a role that keeps its tables locked holds generation back.
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

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/stratnum.h"
#include "access/tableam.h"
#include "catalog/pg_am.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_index.h"
#include "catalog/pg_opfamily.h"
#include "catalog/pg_type.h"
#include "executor/tuptable.h"
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
#include "utils/rel.h"
#include "utils/snapmgr.h"
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
#include "pg/library_objects.hpp"
#include "pg/settings.hpp"
#include "pg/shared_state.hpp"

namespace {

// Present while some database may still hold keys above what the generator knows of.
constexpr char kKeysUncheckedFileName[] = "snowflake_keys_unchecked";

// How long the reads of one database wait in all for tables (and indexes) that other sessions
// hold locked, before each such table counts as holding keys up to the end of the window.
constexpr long kLockWaitBudgetMs = 1000;

// How many of the highest keys beyond the window an index scan looks at for one of this server's
// pair, to report: enough for any real table, and a bound on what a table of others' keys costs.
constexpr int kKeysBeyondWindowLooked = 1000;

// The columns that may hold keys, each as a table and its attribute number: a column whose
// default calls snowflake_nextval() (its own default, its type's, or an ancestor's, down every
// level of partitions and inheritance children; a snowflake column's default calls it inside the
// assignment cast, and pg_depend records every function a default calls), and every column that
// leads a btree index, since a table keeps its keys when its default goes (a detached partition, a
// default dropped or set elsewhere). Whether the column is a bigint or a snowflake (or a domain
// over either) is checked once the table is locked. A foreign table lives elsewhere and another
// session's temporary table cannot be read. Run with search_path pinned.
constexpr char kKeyColumnsQuery[] =
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
    "SELECT c.oid, a.attnum FROM key_column AS k"
    " JOIN pg_catalog.pg_class AS c ON c.oid = k.relid"
    " JOIN pg_catalog.pg_attribute AS a ON a.attrelid = c.oid AND a.attname = k.attname"
    " AND NOT a.attisdropped"
    " WHERE c.relkind IN ('r', 'm') AND c.relpersistence <> 't'"
    " UNION"
    " SELECT i.indrelid, i.indkey[0] FROM pg_catalog.pg_index AS i"
    " JOIN pg_catalog.pg_class AS c ON c.oid = i.indrelid"
    " JOIN pg_catalog.pg_class AS ic ON ic.oid = i.indexrelid"
    " JOIN pg_catalog.pg_am AS am ON am.oid = ic.relam"
    " WHERE am.amname = 'btree' AND i.indkey[0] <> 0"
    " AND c.relkind IN ('r', 'm') AND c.relpersistence <> 't'"
    " ORDER BY 1, 2";

// The prepared transactions of this database: a table, column, default or index they created is
// in no catalog a read can see, so their keys count as reaching the end of the window.
constexpr char kPreparedTransactionsQuery[] =
    "SELECT pg_catalog.count(*) FROM pg_catalog.pg_prepared_xacts "
    "WHERE database OPERATOR(pg_catalog.=) pg_catalog.current_database()";

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

// Takes a lock a read needs, waiting on the latch (cancellably) while the budget lasts.
bool lock_within_budget(Oid relation, TimestampTz budget_end) {
    for (;;) {
        if (ConditionalLockRelationOid(relation, AccessShareLock)) {
            return true;
        }
        if (GetCurrentTimestamp() >= budget_end) {
            return false;
        }
        (void)WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 10,
                        PG_WAIT_EXTENSION);
        ResetLatch(MyLatch);
        CHECK_FOR_INTERRUPTS();
    }
}

// What the reads of one database found. The text fields live in result_context, the caller's
// memory context, which outlives every read.
struct KeyProbe {
    MemoryContext result_context;
    TimestampTz lock_budget_end;
    // The snowflake type of this installation, or InvalidOid before version 1.6.
    Oid id_type;
    int columns;
    int64 highest_key;       // of this server's pair in the window, or -1
    const char *key_source;  // where it is stored: column, table and database
    int locked_out;          // tables that could not be locked within the budget
    const char *first_locked_out;
    int64 prepared_transactions;
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

// The keys one read found of this server's pair: the highest in the window and, for the log,
// one beyond it; -1 for none.
struct ColumnKeys {
    int64 in_window;
    int64 beyond_window;
};

// Whether a key carries this server's node pair.
bool own_key(Datum value, bool is_null, const snowflake::KeyWindow &window) {
    return !is_null && (DatumGetInt64(value) & snowflake::kNodeFieldsMask) == window.node_fields;
}

// A btree index whose first column is the key itself, usable to read the key range: valid, with
// no predicate, ascending, of the integer operator family (so that its order is bigint's and its
// comparisons are PostgreSQL's own; a snowflake column's indexes are of it too, through the
// type's binary cast to bigint). Returned locked and open, or null; *locked_out is set when such
// an index stays locked past the budget.
Relation open_key_index(Relation table, AttrNumber column, TimestampTz budget_end,
                        bool *locked_out) {
    List *indexes = RelationGetIndexList(table);
    ListCell *cell;
    foreach (cell, indexes) {
        const Oid index_oid = lfirst_oid(cell);
        if (!lock_within_budget(index_oid, budget_end)) {
            *locked_out = true;
            continue;
        }
        Relation index = index_open(index_oid, NoLock);
        const Form_pg_index form = index->rd_index;
        if (index->rd_rel->relam == BTREE_AM_OID && form->indisvalid && form->indnkeyatts >= 1 &&
            form->indkey.values[0] == column &&
            heap_attisnull(index->rd_indextuple, Anum_pg_index_indpred, nullptr) &&
            index->rd_opfamily[0] == INTEGER_BTREE_FAM_OID &&
            (index->rd_indoption[0] & INDOPTION_DESC) == 0) {
            return index;
        }
        index_close(index, AccessShareLock);
    }
    return nullptr;
}

// The comparison of the index's operator family for the type it indexes (bigint), so that the
// scan compares keys as the index does.
RegProcedure index_comparison(Relation index, StrategyNumber strategy) {
    const Oid type = index->rd_opcintype[0];
    const Oid comparison = get_opfamily_member(index->rd_opfamily[0], type, type, strategy);
    if (!OidIsValid(comparison)) {
        elog(ERROR, "snowflake: operator family %u has no operator of strategy %d for type %u",
             index->rd_opfamily[0], strategy, type);
    }
    return get_opcode(comparison);
}

// Walks the index from the top of a key range down to the first key of this server's pair,
// looking at no more than limit keys (0: no limit).
int64 highest_own_key_in_index(Relation table, Relation index, AttrNumber column,
                               const snowflake::KeyWindow &window, StrategyNumber lower_strategy,
                               int64 lower, int64 upper, int limit) {
    SnapshotData dirty;
    InitDirtySnapshot(dirty);
    ScanKeyData keys[2];
    ScanKeyInit(&keys[0], 1, lower_strategy, index_comparison(index, lower_strategy),
                Int64GetDatum(lower));
    ScanKeyInit(&keys[1], 1, BTLessEqualStrategyNumber,
                index_comparison(index, BTLessEqualStrategyNumber), Int64GetDatum(upper));
    IndexScanDesc scan = snowflake_index_beginscan(table, index, &dirty, 2);
    index_rescan(scan, keys, 2, nullptr, 0);
    TupleTableSlot *slot = table_slot_create(table, nullptr);
    int64 found = -1;
    for (int looked = 0;
         (limit == 0 || looked < limit) && index_getnext_slot(scan, BackwardScanDirection, slot);
         looked++) {
        bool is_null = true;
        const Datum value = slot_getattr(slot, column, &is_null);
        if (own_key(value, is_null, window)) {
            found = DatumGetInt64(value);
            break;
        }
        CHECK_FOR_INTERRUPTS();
    }
    ExecDropSingleTupleTableSlot(slot);
    index_endscan(scan);
    return found;
}

// Reads every row of a table whose key no index leads.
ColumnKeys own_keys_in_table(Relation table, AttrNumber column,
                             const snowflake::KeyWindow &window) {
    SnapshotData dirty;
    InitDirtySnapshot(dirty);
    TableScanDesc scan = snowflake_table_beginscan(table, &dirty);
    TupleTableSlot *slot = table_slot_create(table, nullptr);
    ColumnKeys found{-1, -1};
    for (uint64 rows = 1; table_scan_getnextslot(scan, ForwardScanDirection, slot); rows++) {
        bool is_null = true;
        const Datum value = slot_getattr(slot, column, &is_null);
        if (own_key(value, is_null, window)) {
            const int64 key = DatumGetInt64(value);
            if (key >= window.lowest_id && key <= window.highest_id) {
                found.in_window = std::max(found.in_window, key);
            } else if (key > window.highest_id) {
                found.beyond_window = std::max(found.beyond_window, key);
            }
        }
        if (rows % 4096 == 0) {
            CHECK_FOR_INTERRUPTS();
        }
    }
    ExecDropSingleTupleTableSlot(slot);
    table_endscan(scan);
    return found;
}

// Notes a table that stayed locked past the budget.
void note_locked_out(KeyProbe *probe, Oid table) {
    if (probe->locked_out++ == 0) {
        const char *name = get_rel_name(table);
        probe->first_locked_out = MemoryContextStrdup(
            probe->result_context,
            quote_qualified_identifier(get_namespace_name(get_rel_namespace(table)),
                                       name != nullptr ? name : "(dropped)"));
    }
}

// Reads one column's keys of this server's pair, the table locked only meanwhile. A table
// dropped since the listing is skipped, and so is a column dropped or of any type but bigint or
// snowflake (or a domain over either).
void probe_column(Oid table_oid, AttrNumber column, const snowflake::KeyWindow &window,
                  int64 now_unix_ms, KeyProbe *probe) {
    if (!lock_within_budget(table_oid, probe->lock_budget_end)) {
        note_locked_out(probe, table_oid);
        return;
    }
    Relation table = try_relation_open(table_oid, NoLock);
    if (table == nullptr) {
        UnlockRelationOid(table_oid, AccessShareLock);
        return;
    }
    const TupleDesc descriptor = RelationGetDescr(table);
    if (column > descriptor->natts || TupleDescAttr(descriptor, column - 1)->attisdropped) {
        relation_close(table, AccessShareLock);
        return;
    }
    const Oid key_type = getBaseType(TupleDescAttr(descriptor, column - 1)->atttypid);
    if (key_type != INT8OID && (!OidIsValid(probe->id_type) || key_type != probe->id_type)) {
        relation_close(table, AccessShareLock);
        return;
    }
    const char *table_name = quote_qualified_identifier(
        get_namespace_name(RelationGetNamespace(table)), RelationGetRelationName(table));
    const char *source =
        psprintf("column %s of table %s in database \"%s\"",
                 quote_identifier(NameStr(TupleDescAttr(descriptor, column - 1)->attname)),
                 table_name, get_database_name(MyDatabaseId));
    ErrorContextCallback context{error_context_stack, probe_error_context,
                                 const_cast<char *>(table_name)};
    error_context_stack = &context;
    bool index_locked_out = false;
    Relation index = open_key_index(table, column, probe->lock_budget_end, &index_locked_out);
    ColumnKeys found{-1, -1};
    if (index != nullptr) {
        found.in_window =
            highest_own_key_in_index(table, index, column, window, BTGreaterEqualStrategyNumber,
                                     window.lowest_id, window.highest_id, 0);
        if (window.highest_id < snowflake::kMaxId) {
            found.beyond_window = highest_own_key_in_index(
                table, index, column, window, BTGreaterStrategyNumber, window.highest_id,
                snowflake::kMaxId, kKeysBeyondWindowLooked);
        }
        index_close(index, AccessShareLock);
    } else if (index_locked_out) {
        note_locked_out(probe, table_oid);
    } else {
        found = own_keys_in_table(table, column, window);
    }
    error_context_stack = context.previous;
    relation_close(table, AccessShareLock);
    if (found.in_window > probe->highest_key) {
        probe->highest_key = found.in_window;
        probe->key_source = MemoryContextStrdup(probe->result_context, source);
    }
    if (found.beyond_window >= 0) {
        report_key_beyond_window(found.beyond_window, source, now_unix_ms);
    }
    probe->columns++;
}

// Every column of this database that may hold keys of snowflake_nextval(), read once each.
KeyProbe probe_keys(Oid nextval_oid, const snowflake::KeyWindow &window, int64 now_unix_ms) {
    KeyProbe probe{};
    probe.result_context = CurrentMemoryContext;
    probe.lock_budget_end = GetCurrentTimestamp() + kLockWaitBudgetMs * 1000;
    probe.highest_key = -1;
    probe.id_type = snowflake_id_type_beside(nextval_oid);
    SPI_connect();
    Oid oid_type[1] = {OIDOID};
    Datum nextval_argument[1] = {ObjectIdGetDatum(nextval_oid)};
    if (SPI_execute_with_args(kKeyColumnsQuery, 1, oid_type, nextval_argument, nullptr, true, 0) !=
        SPI_OK_SELECT) {
        elog(ERROR, "snowflake: could not list the columns that may hold keys");
    }
    const uint64 column_count = SPI_processed;
    auto *tables = static_cast<Oid *>(
        MemoryContextAlloc(probe.result_context, sizeof(Oid) * (column_count + 1)));
    auto *columns = static_cast<AttrNumber *>(
        MemoryContextAlloc(probe.result_context, sizeof(AttrNumber) * (column_count + 1)));
    for (uint64 i = 0; i < column_count; i++) {
        bool is_null = true;
        tables[i] = DatumGetObjectId(
            SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &is_null));
        columns[i] =
            DatumGetInt16(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2, &is_null));
    }
    probe.prepared_transactions = query_bigint(kPreparedTransactionsQuery, 0, nullptr, nullptr);
    SPI_finish();
    for (uint64 i = 0; i < column_count; i++) {
        probe_column(tables[i], columns[i], window, now_unix_ms, &probe);
    }
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

// Warns that keys this database's reads could not see count as reaching the window's end, which
// generation is held back to.
void warn_held_to_window_end(const char *what, const char *hint, int64 window_end_ms) {
    ereport(WARNING, (errmsg("snowflake: %s", what),
                      errdetail("Their keys count as reaching %s, the furthest ahead a key of this "
                                "server's node pair may raise the generator "
                                "(snowflake.key_floor_max_lead): ids are held back until then.",
                                timestamptz_to_str(snowflake::pg_us_from_unix_ms(window_end_ms))),
                      errhint("%s", hint)));
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
    int64 window_end_ms = 0;
    (void)shared->key_window_end_ms.compare_exchange_strong(
        window_end_ms,
        snowflake::key_window_end(now_unix_ms, snowflake_key_floor_max_lead_setting));
    window_end_ms = shared->key_window_end_ms.load();
    const snowflake::KeyWindow window = snowflake::key_window(now_unix_ms, window_end_ms, node);
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
    if (probe.locked_out > 0) {
        const char *source =
            probe.locked_out == 1
                ? psprintf("table %s", probe.first_locked_out)
                : psprintf("table %s (and %d more)", probe.first_locked_out, probe.locked_out - 1);
        raise_floor_through(shared, window.last_unix_ms, -1, source, now_unix_ms);
    }
    if (probe.prepared_transactions > 0) {
        raise_floor_through(shared, window.last_unix_ms, -1,
                            psprintf("the tables of %lld prepared transactions",
                                     static_cast<long long>(probe.prepared_transactions)),
                            now_unix_ms);
    }
    raise_floor_through(shared,
                        snowflake::key_floor_through_ms(window, now_unix_ms, probe.highest_key),
                        probe.highest_key, probe.key_source, now_unix_ms);
    disarm_if_all_checked(shared, remember_database_checked(shared));
    AtEOXact_GUC(false, guc_nest_level);
    SetUserIdAndSecContext(saved_user, saved_security_context);

    const char *database = get_database_name(MyDatabaseId);
    if (probe.locked_out > 0 && window.last_unix_ms >= now_unix_ms) {
        warn_held_to_window_end(
            psprintf("%d tables in database \"%s\" were locked by other sessions past the %ld "
                     "ms the reads of their keys may wait; the first is %s",
                     probe.locked_out, database, kLockWaitBudgetMs, probe.first_locked_out),
            "Generation resumes by itself then. Find the sessions that hold the locks in "
            "pg_locks.",
            window.last_unix_ms);
    }
    if (probe.prepared_transactions > 0 && window.last_unix_ms >= now_unix_ms) {
        warn_held_to_window_end(
            psprintf("database \"%s\" has %lld prepared transactions, whose tables the reads of "
                     "keys cannot see",
                     database, static_cast<long long>(probe.prepared_transactions)),
            "Generation resumes by itself then. Commit or roll back the prepared transactions "
            "(pg_prepared_xacts) before a start without the mark file to avoid the wait.",
            window.last_unix_ms);
    }
    if (probe.highest_key < 0) {
        ereport(LOG, (errmsg("snowflake: no key of this server's node pair ahead of the clock in "
                             "database \"%s\" (%d columns read)",
                             database, probe.columns)));
    } else {
        const snowflake::DecodeResult decoded = snowflake::decode(probe.highest_key);
        ereport(
            LOG,
            (errmsg("snowflake: raised the generator above key %lld of %s",
                    static_cast<long long>(probe.highest_key), probe.key_source),
             errdetail("It is the highest key of this server's node pair ahead of the clock "
                       "in %d columns; its timestamp is %s. Ids issued from now on are above "
                       "it.",
                       probe.columns,
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
