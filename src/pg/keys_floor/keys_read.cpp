// The read of one database's stored keys, for the floor from keys (keys_floor.cpp says when it
// runs): every column that may hold keys of snowflake_nextval() (kKeyColumnsQuery says which) is
// read once, and the highest key of this server's node pair in the window and beyond it is kept,
// with where it is stored (doc/operations.md "Upgrading PostgreSQL" and "Guarantees").
//
// The keys are read without the planner or the executor: an index scan of a btree index led by
// the column, or a scan of the table. Every row version is looked at, and a key counts if its row
// is visible to the snapshot the read of the database began with (one for every table, so that a
// row that an UPDATE moves from a table not yet read into one already read is seen where it was)
// or to a dirty snapshot when it is read (so that rows of transactions in progress or prepared
// count too). So no privilege, row-level security policy, index predicate or expression,
// statistics object or trigger of any role runs or is consulted, and none can hide a key or fail
// the read. Each table is locked only while it is read. Lock waits share one short, cancellable
// budget; a table (or its index) locked past it fails the read of the database, which is tried
// again later: its keys cannot be known. A table truncated, rewritten or dropped under the read
// makes it begin again with a new snapshot, and is locked from the start of every later pass, so
// that it cannot change again; past kChangedTablesLimit such tables the read fails, naming them,
// so that no role can keep it beginning again for ever.

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
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "pgstat.h"
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
#include "core/key_floor.hpp"
#include "pg/as_owner.hpp"
#include "pg/clock.hpp"
#include "pg/compat.hpp"
#include "pg/keys_floor/keys_floor_parts.hpp"
#include "pg/keys_floor/keys_queries.hpp"
#include "pg/keys_floor/keys_read.hpp"
#include "pg/library_objects.hpp"
#include "pg/settings.hpp"
#include "pg/shared_state.hpp"

namespace {

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
void read_error_context(void *table) {
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

// Whether the row version in the slot counts: visible to the snapshot the read began with, or to
// a dirty snapshot now.
bool row_counts(Relation table, TupleTableSlot *slot, Snapshot read_start) {
    SnapshotData dirty;
    InitDirtySnapshot(dirty);
    return table_tuple_satisfies_snapshot(table, slot, read_start) ||
           table_tuple_satisfies_snapshot(table, slot, &dirty);
}

// A table that stayed locked past the budget fails the read of the database: the keys in it
// cannot be known, and the read is tried again.
[[noreturn]] void report_locked(Oid table) {
    const char *name = get_rel_name(table);
    ereport(ERROR,
            (errcode(ERRCODE_LOCK_NOT_AVAILABLE),
             errmsg("table %s is locked by another session",
                    quote_qualified_identifier(get_namespace_name(get_rel_namespace(table)),
                                               name != nullptr ? name : "(dropped)")),
             errhint("Find the session that holds it in pg_locks and end its transaction.")));
    pg_unreachable();
}

// A btree index whose first column is the key itself, usable to read the key range: valid, with
// no predicate, ascending, of the integer operator family (so that its order is bigint's and its
// comparisons are PostgreSQL's own; a snowflake column's indexes are of it too, through the
// type's binary cast to bigint). Returned locked and open, or null.
Relation open_key_index(Relation table, AttrNumber column, TimestampTz budget_end) {
    List *indexes = RelationGetIndexList(table);
    ListCell *cell;
    foreach (cell, indexes) {
        const Oid index_oid = lfirst_oid(cell);
        // A table scan serves where an index stays locked.
        if (!lock_within_budget(index_oid, budget_end)) {
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

// Walks the index from the top of a key range down: to the first key of this server's pair that
// counts, or with every_key through all of them, each noted in found. In normal operation the
// range is empty, one descent of the index.
void own_keys_in_index(Relation table, Relation index, AttrNumber column,
                       const snowflake::KeyWindow &window, Snapshot read_start,
                       StrategyNumber lower_strategy, int64 lower, int64 upper, bool every_key,
                       snowflake::FoundKeys *found) {
    ScanKeyData keys[2];
    ScanKeyInit(&keys[0], 1, lower_strategy, index_comparison(index, lower_strategy),
                Int64GetDatum(lower));
    ScanKeyInit(&keys[1], 1, BTLessEqualStrategyNumber,
                index_comparison(index, BTLessEqualStrategyNumber), Int64GetDatum(upper));
    IndexScanDesc scan = snowflake_index_beginscan(table, index, SnapshotAny, 2);
    index_rescan(scan, keys, 2, nullptr, 0);
    TupleTableSlot *slot = table_slot_create(table, nullptr);
    while (index_getnext_slot(scan, BackwardScanDirection, slot)) {
        bool is_null = true;
        const Datum value = slot_getattr(slot, column, &is_null);
        if (!is_null && snowflake::may_hold_generation(window, DatumGetInt64(value)) &&
            row_counts(table, slot, read_start)) {
            snowflake::note_stored_key(window, DatumGetInt64(value), found);
            if (!every_key) {
                break;
            }
        }
        CHECK_FOR_INTERRUPTS();
    }
    ExecDropSingleTupleTableSlot(slot);
    index_endscan(scan);
}

// Reads every row of a table whose key no btree index of the integer family leads.
snowflake::FoundKeys own_keys_in_table(Relation table, AttrNumber column,
                                       const snowflake::KeyWindow &window, Snapshot read_start) {
    TableScanDesc scan = snowflake_table_beginscan(table, SnapshotAny);
    TupleTableSlot *slot = table_slot_create(table, nullptr);
    snowflake::FoundKeys found;
    for (uint64 rows = 1; table_scan_getnextslot(scan, ForwardScanDirection, slot); rows++) {
        bool is_null = true;
        const Datum value = slot_getattr(slot, column, &is_null);
        if (!is_null && snowflake::may_hold_generation(window, DatumGetInt64(value)) &&
            row_counts(table, slot, read_start)) {
            snowflake::note_stored_key(window, DatumGetInt64(value), &found);
        }
        if (rows % 4096 == 0) {
            CHECK_FOR_INTERRUPTS();
        }
    }
    ExecDropSingleTupleTableSlot(slot);
    table_endscan(scan);
    return found;
}

// Logs a column's highest key of this server's pair that is too far ahead to be waited for, and
// how many such keys it holds: generation stops until the clock passes them (keys_floor.cpp).
void report_key_beyond_window(int64 key, uint64 keys, const char *source, int64 now_unix_ms) {
    const snowflake::DecodeResult decoded = snowflake::decode(key);
    ereport(LOG,
            (errmsg("snowflake: key %lld of %s is %lld ms ahead of the clock, beyond "
                    "snowflake.key_floor_max_lead (%d ms); it stops generation",
                    static_cast<long long>(key), source,
                    static_cast<long long>(decoded.parts.unix_ms - now_unix_ms),
                    snowflake_key_floor_max_lead_setting),
             errdetail("Keys of this server's node pair beyond the bound in this column: %llu.",
                       static_cast<unsigned long long>(keys)),
             errhint("%s", snowflake_beyond_key_advice(key, now_unix_ms))));
}

// The tables truncated, rewritten or dropped under earlier passes of the read of one database,
// each named as its refusal names it.
struct ChangedTables {
    int count;
    Oid tables[kChangedTablesLimit];
    const char *names[kChangedTablesLimit];
};

// A table and its owner, for a message.
const char *table_and_owner(Relation table) {
    const char *owner = GetUserNameFromId(table->rd_rel->relowner, true);
    return psprintf("%s (owner %s)",
                    quote_qualified_identifier(get_namespace_name(RelationGetNamespace(table)),
                                               RelationGetRelationName(table)),
                    owner != nullptr ? quote_identifier(owner) : "(dropped)");
}

// Reads one column's keys of this server's pair, the table locked only meanwhile. A column of any
// type but bigint or snowflake (or a domain over either) is skipped. Returns false, naming the
// table in *changed, for a table dropped, truncated or rewritten since it was listed, or a column
// dropped since: those change no row version that the read's snapshot could see, so rows moved out
// of it into a table read earlier would be missed, and the read of the database begins again.
bool read_column(Oid table_oid, AttrNumber column, Oid listed_filenode, Oid id_type,
                 const snowflake::KeyWindow &window, int64 now_unix_ms, Snapshot read_start,
                 TimestampTz lock_budget_end, DatabaseKeys *keys, const char **changed) {
    if (!lock_within_budget(table_oid, lock_budget_end)) {
        report_locked(table_oid);
    }
    Relation table = try_relation_open(table_oid, NoLock);
    if (table == nullptr) {
        UnlockRelationOid(table_oid, AccessShareLock);
        *changed = psprintf("a table dropped during the read (OID %u)", table_oid);
        return false;
    }
    if (table->rd_rel->relfilenode != listed_filenode) {
        *changed = table_and_owner(table);
        relation_close(table, AccessShareLock);
        return false;
    }
    // The listing saw the column, so a drop came after the read's snapshot: its keys may have been
    // copied into a column that the snapshot cannot see.
    const TupleDesc descriptor = RelationGetDescr(table);
    if (column > descriptor->natts || TupleDescAttr(descriptor, column - 1)->attisdropped) {
        *changed = table_and_owner(table);
        relation_close(table, AccessShareLock);
        return false;
    }
    const Oid key_type = getBaseType(TupleDescAttr(descriptor, column - 1)->atttypid);
    if (key_type != INT8OID && (!OidIsValid(id_type) || key_type != id_type)) {
        relation_close(table, AccessShareLock);
        return true;
    }
    const char *table_name = quote_qualified_identifier(
        get_namespace_name(RelationGetNamespace(table)), RelationGetRelationName(table));
    const char *source =
        psprintf("column %s of table %s in database \"%s\"",
                 quote_identifier(NameStr(TupleDescAttr(descriptor, column - 1)->attname)),
                 table_and_owner(table), get_database_name(MyDatabaseId));
    ErrorContextCallback context{error_context_stack, read_error_context,
                                 const_cast<char *>(table_name)};
    error_context_stack = &context;
    Relation index = open_key_index(table, column, lock_budget_end);
    snowflake::FoundKeys found;
    if (index != nullptr) {
        own_keys_in_index(table, index, column, window, read_start, BTGreaterEqualStrategyNumber,
                          window.lowest_id, window.highest_id, false, &found);
        // Every key beyond the window is counted, for the refusal to say how many there are.
        if (window.highest_id < snowflake::kMaxId) {
            own_keys_in_index(table, index, column, window, read_start, BTGreaterStrategyNumber,
                              window.highest_id, snowflake::kMaxId, true, &found);
        }
        index_close(index, AccessShareLock);
    } else {
        found = own_keys_in_table(table, column, window, read_start);
    }
    error_context_stack = context.previous;
    relation_close(table, AccessShareLock);
    if (found.in_window > keys->in_window) {
        keys->in_window = found.in_window;
        keys->in_window_source = source;
    }
    if (found.beyond_window >= 0) {
        report_key_beyond_window(found.beyond_window, found.beyond_window_keys, source,
                                 now_unix_ms);
        keys->beyond_window_columns++;
        keys->beyond_window_keys += found.beyond_window_keys;
        if (found.beyond_window > keys->beyond_window) {
            keys->beyond_window = found.beyond_window;
            keys->beyond_window_source = source;
        }
    }
    keys->columns++;
    return true;
}

// Fails the read once more tables changed under it than it begins again for: a role that keeps
// truncating or rewriting her tables could otherwise keep it beginning again for ever.
[[noreturn]] void refuse_changing_tables(const ChangedTables &changed, const char *last) {
    StringInfoData names;
    initStringInfo(&names);
    for (int i = 0; i < changed.count; i++) {
        appendStringInfo(&names, "%s, ", changed.names[i]);
    }
    appendStringInfoString(&names, last);
    ereport(ERROR,
            (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
             errmsg("%d tables were truncated, rewritten or dropped, or lost a column, while the "
                    "keys of this database were read: %s",
                    changed.count + 1, names.data),
             errdetail("The read begins again after each such change, and locks the table from "
                       "then on; past %d tables it gives up, and tries again later.",
                       kChangedTablesLimit),
             errhint("Find the sessions that change them (pg_stat_activity) and stop them.")));
    pg_unreachable();
}

// Every column of this database that may hold keys, read once each with one snapshot, after the
// tables that changed under earlier passes are locked; false, naming the table in *changed, if
// another table changed under this pass, which must then begin again.
bool read_keys_once(const snowflake::KeyWindow &window, int64 now_unix_ms,
                    const ChangedTables &locked, DatabaseKeys *keys, Oid *changed_table,
                    const char **changed) {
    *keys = DatabaseKeys{};
    keys->in_window = -1;
    keys->beyond_window = -1;
    const TimestampTz lock_budget_end = GetCurrentTimestamp() + kKeysLockWaitBudgetMs * 1000;
    // Held until the database's read ends, before the snapshot, so that the tables stay as the
    // snapshot sees them.
    for (int i = 0; i < locked.count; i++) {
        if (!lock_within_budget(locked.tables[i], lock_budget_end)) {
            report_locked(locked.tables[i]);
        }
    }
    // The listing sees the catalog as the read's snapshot does, so that a table changed since shows
    // in its relcache entry and the read begins again with a newer snapshot.
    const Snapshot read_start = RegisterSnapshot(GetTransactionSnapshot());
    PushActiveSnapshot(read_start);
    SPI_connect();
    const int64 nextval_oid = query_bigint(kNextvalQuery, 0, nullptr, nullptr);
    const Oid nextval = nextval_oid < 0 ? InvalidOid : static_cast<Oid>(nextval_oid);
    const Oid id_type = OidIsValid(nextval) ? snowflake_id_type_beside(nextval) : InvalidOid;
    Datum *changed_oids = static_cast<Datum *>(palloc(sizeof(Datum) * (locked.count + 1)));
    for (int i = 0; i < locked.count; i++) {
        changed_oids[i] = ObjectIdGetDatum(locked.tables[i]);
    }
    Oid argument_types[2] = {OIDOID, OIDARRAYOID};
    Datum arguments[2] = {ObjectIdGetDatum(nextval),
                          PointerGetDatum(construct_array(changed_oids, locked.count, OIDOID,
                                                          sizeof(Oid), true, TYPALIGN_INT))};
    if (SPI_execute_with_args(kKeyColumnsQuery, 2, argument_types, arguments, nullptr, true, 0) !=
        SPI_OK_SELECT) {
        elog(ERROR, "snowflake: could not list the columns that may hold keys");
    }
    const uint64 column_count = SPI_processed;
    auto *tables = static_cast<Oid *>(SPI_palloc(sizeof(Oid) * (column_count + 1)));
    auto *columns = static_cast<AttrNumber *>(SPI_palloc(sizeof(AttrNumber) * (column_count + 1)));
    auto *filenodes = static_cast<Oid *>(SPI_palloc(sizeof(Oid) * (column_count + 1)));
    for (uint64 i = 0; i < column_count; i++) {
        bool is_null = true;
        tables[i] = DatumGetObjectId(
            SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &is_null));
        columns[i] =
            DatumGetInt16(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2, &is_null));
        filenodes[i] = DatumGetObjectId(
            SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 3, &is_null));
    }
    const int64 prepared_transactions =
        query_bigint(kPreparedTransactionsQuery, 0, nullptr, nullptr);
    SPI_finish();
    PopActiveSnapshot();
    if (prepared_transactions > 0) {
        ereport(
            ERROR,
            (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
             errmsg("database \"%s\" has %lld prepared transactions, whose new tables the read "
                    "of keys cannot see",
                    get_database_name(MyDatabaseId), static_cast<long long>(prepared_transactions)),
             errhint("Commit or roll back the prepared transactions (pg_prepared_xacts).")));
    }
    bool unchanged = true;
    for (uint64 i = 0; i < column_count && unchanged; i++) {
        unchanged = read_column(tables[i], columns[i], filenodes[i], id_type, window, now_unix_ms,
                                read_start, lock_budget_end, keys, changed);
        if (!unchanged) {
            *changed_table = tables[i];
        }
    }
    UnregisterSnapshot(read_start);
    return unchanged;
}

}  // namespace

DatabaseKeys snowflake_read_database_keys(const snowflake::KeyWindow &window) {
    const int64 now_unix_ms = snowflake_wall_clock_unix_ms();
    DatabaseKeys keys;
    ChangedTables changed{};
    run_as_role({BOOTSTRAP_SUPERUSERID, "snowflake key floor",
                 "reading this database's stored keys", false},
                [&] {
                    Oid table = InvalidOid;
                    const char *name = nullptr;
                    while (!read_keys_once(window, now_unix_ms, changed, &keys, &table, &name)) {
                        if (changed.count == kChangedTablesLimit) {
                            refuse_changing_tables(changed, name);
                        }
                        changed.tables[changed.count] = table;
                        changed.names[changed.count++] = name;
                        CHECK_FOR_INTERRUPTS();
                    }
                });
    return keys;
}
