// The lifecycle of a row of snowflake_partitioned_tables (version 1.8): the type of its parent
// column, which a restore never reads as another table; the trigger that leaves out a restored
// row whose table is not there; the event trigger that removes the row of a dropped table; and
// (version 1.10) the trigger that keeps a logical replication subscriber's rows its own.
// doc/design.md "Time partitions" says why a regclass column was not enough.
//
// A row names its table by OID. pg_dump writes a column by its output function, which gives a
// table's name while the table exists and its bare number once it is gone, and pg_restore reads
// it back by the input function. As a regclass, that number became whatever relation has that
// OID in the restored cluster (another role's table, to which the setup's retention was then
// applied), or collided with a set-up table's row and failed the whole table's restore. Here the
// input reads a bare number, or a name this database has no table of, as no table, and the
// trigger leaves such a row out with a warning; the event trigger keeps rows from pointing at
// dropped tables at all, so that a dump taken from 1.8 has no number to write.

extern "C" {
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "commands/event_trigger.h"
#include "commands/trigger.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "libpq/pqformat.h"
#include "replication/logicalworker.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/snapmgr.h"
}

#include "core/partition_plan.hpp"
#include "pg/as_owner.hpp"
#include "pg/compat.hpp"
#include "pg/library_objects.hpp"
#include "pg/partitions/partition_setups.hpp"

extern "C" {
PG_FUNCTION_INFO_V1(snowflake_partitioned_table_in);
PG_FUNCTION_INFO_V1(snowflake_partitioned_table_out);
PG_FUNCTION_INFO_V1(snowflake_partitioned_table_recv);
PG_FUNCTION_INFO_V1(snowflake_partitioned_table_send);
PG_FUNCTION_INFO_V1(snowflake_leave_out_setup_without_table);
PG_FUNCTION_INFO_V1(snowflake_forget_dropped_setups);
PG_FUNCTION_INFO_V1(snowflake_keep_setups_local);
}

namespace {

// The configuration table of the installation a function belongs to (its schema is the
// extension's), or InvalidOid once it is dropped.
Oid config_table_beside(Oid function) {
    return snowflake_extension_table(get_func_namespace(function), "snowflake_partitioned_tables");
}

// Whether pg_class holds the relation in a snapshot: the one the rows of the configuration table
// are read with, so that a table and its setup, made by one transaction, are seen together. The
// catalog cache could answer from a stale entry that says no table has an OID a later table got.
bool table_in_snapshot(Oid relation, Snapshot snapshot) {
    Relation classes = table_open(RelationRelationId, AccessShareLock);
    ScanKeyData key;
    ScanKeyInit(&key, Anum_pg_class_oid, BTEqualStrategyNumber, F_OIDEQ,
                ObjectIdGetDatum(relation));
    SysScanDesc scan = systable_beginscan(classes, ClassOidIndexId, true, snapshot, 1, &key);
    const bool found = HeapTupleIsValid(systable_getnext(scan));
    systable_endscan(scan);
    table_close(classes, AccessShareLock);
    return found;
}

}  // namespace

// Reads a table's name as regclass does, but a bare number (what pg_dump writes for a table
// dropped before the dump), "-" or a name this database has no table of as no table, so that a
// restore never applies a setup to a relation that merely has the same OID.
extern "C" Datum snowflake_partitioned_table_in(PG_FUNCTION_ARGS) {
    const char *text = PG_GETARG_CSTRING(0);
    if (snowflake::names_no_table(text)) {
        PG_RETURN_OID(InvalidOid);
    }
    List *names = snowflake_qualified_name_list(text);
    PG_RETURN_OID(RangeVarGetRelid(makeRangeVarFromNameList(names), NoLock, true));
}

// Writes the table as regclass does: its name, schema-qualified where search_path does not find
// it, so that a restore reads it back as the same table.
extern "C" Datum snowflake_partitioned_table_out(PG_FUNCTION_ARGS) {
    return DirectFunctionCall1(regclassout, PG_GETARG_DATUM(0));
}

// The binary form's reading: no table, whatever OID it holds. An OID from another server (a
// logical replication subscription in binary mode) or from a binary COPY names any relation here,
// as a bare number in the text form does.
extern "C" Datum snowflake_partitioned_table_recv(PG_FUNCTION_ARGS) {
    StringInfo buffer = reinterpret_cast<StringInfo>(PG_GETARG_POINTER(0));
    (void)pq_getmsgint(buffer, sizeof(Oid));
    PG_RETURN_OID(InvalidOid);
}

// The binary form is the OID, as regclass's is.
extern "C" Datum snowflake_partitioned_table_send(PG_FUNCTION_ARGS) {
    return DirectFunctionCall1(oidsend, PG_GETARG_DATUM(0));
}

// Before a row goes into snowflake_partitioned_tables: one whose table the input found no table
// for (a restore of a dump that held a dropped table's row, or that left the table out) is left
// out with a warning naming its setup, instead of being applied to no table, or colliding.
extern "C" Datum snowflake_leave_out_setup_without_table(PG_FUNCTION_ARGS) {
    const auto *trigger_data = reinterpret_cast<TriggerData *>(fcinfo->context);
    const bool is_its_trigger =
        CALLED_AS_TRIGGER(fcinfo) && TRIGGER_FIRED_BEFORE(trigger_data->tg_event) &&
        TRIGGER_FIRED_FOR_ROW(trigger_data->tg_event) &&
        (TRIGGER_FIRED_BY_INSERT(trigger_data->tg_event) ||
         TRIGGER_FIRED_BY_UPDATE(trigger_data->tg_event)) &&
        RelationGetRelid(trigger_data->tg_relation) == config_table_beside(fcinfo->flinfo->fn_oid);
    if (!is_its_trigger) {
        ereport(ERROR, (errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
                        errmsg("snowflake_leave_out_setup_without_table() is the row trigger "
                               "before INSERT or UPDATE on snowflake_partitioned_tables"),
                        errhint("Leave it on snowflake_partitioned_tables, where the extension "
                                "put it.")));
    }
    HeapTuple row = TRIGGER_FIRED_BY_UPDATE(trigger_data->tg_event) ? trigger_data->tg_newtuple
                                                                    : trigger_data->tg_trigtuple;
    const TupleDesc description = RelationGetDescr(trigger_data->tg_relation);
    bool is_null = true;
    const Oid parent = DatumGetObjectId(heap_getattr(row, 1, description, &is_null));
    if (is_null || OidIsValid(parent)) {
        return PointerGetDatum(row);
    }
    const char *retain = SPI_getvalue(row, description, 4);
    ereport(WARNING,
            (errcode(ERRCODE_UNDEFINED_TABLE),
             errmsg("left out a row of snowflake_partitioned_tables whose table is not in this "
                    "database: every %s, ahead %s, retain %s, time zone %s",
                    SPI_getvalue(row, description, 2), SPI_getvalue(row, description, 3),
                    retain == nullptr ? "NULL" : retain, SPI_getvalue(row, description, 5)),
             errdetail("Its table was written as a number, which pg_dump writes for a table "
                       "dropped before the dump, or by a name this database has no table of; "
                       "reading it as a table could apply the setup to another table."),
             errhint("If its table was restored under another name, set it up again with "
                     "snowflake_partition_table().")));
    return Datum(0);
}

// Removes rows of snowflake_partitioned_tables by their tuple ids, as catalogs are written,
// without the executor: a publication that covers the table with a column list, or a replica
// identity changed by its owner, would fail a DELETE, and with it a DROP of any table. The rows
// still reach logical decoding as deletes, with the whole row (REPLICA IDENTITY FULL). Nothing is
// written where no row matches, and nothing in a read-only transaction, where no row is needed
// gone: a row whose table is gone is never maintained, and a setup is never written there.
void remove_setups(Oid config_table, Oid parent) {
    if (XactReadOnly) {
        return;
    }
    const bool of_one_table = OidIsValid(parent);
    Relation table = table_open(config_table, RowExclusiveLock);
    // The newest snapshot: a row committed after the statement began may be the one to remove.
    Snapshot snapshot = RegisterSnapshot(GetLatestSnapshot());
    TableScanDesc scan = snowflake_table_beginscan(table, snapshot);
    TupleTableSlot *slot = table_slot_create(table, nullptr);
    bool removed = false;
    while (table_scan_getnextslot(scan, ForwardScanDirection, slot)) {
        bool is_null = true;
        const Oid row_parent = DatumGetObjectId(slot_getattr(slot, 1, &is_null));
        const bool matches = of_one_table ? row_parent == parent
                                          : !table_in_snapshot(row_parent, snapshot);
        if (is_null || !matches) {
            continue;
        }
        // A row another transaction holds (its own DROP's removal, not yet committed) is left to
        // it, never awaited: no role's open transaction may hold up other roles' drops. One
        // table's row is awaited: its caller holds the table's lock, so only a transaction that
        // set the same table up could hold it, and that one has ended.
        TM_FailureData failure;
        const TM_Result result =
            snowflake_tuple_delete(table, &slot->tts_tid, snapshot, of_one_table, &failure);
        if (result == TM_Ok) {
            removed = true;
        } else if (result == TM_Invisible) {
            elog(ERROR, "snowflake: a row of snowflake_partitioned_tables is invisible to its scan");
        }
    }
    ExecDropSingleTupleTableSlot(slot);
    table_endscan(scan);
    UnregisterSnapshot(snapshot);
    table_close(table, NoLock);
    if (removed) {
        CommandCounterIncrement();
    }
}

// After any DROP in the database: a dropped table's setup goes with it, whoever dropped it.
extern "C" Datum snowflake_forget_dropped_setups(PG_FUNCTION_ARGS) {
    if (!CALLED_AS_EVENT_TRIGGER(fcinfo)) {
        ereport(ERROR, (errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
                        errmsg("snowflake_forget_dropped_setups() is an event trigger"),
                        errhint("Leave it to the event trigger the extension made.")));
    }
    const Oid config_table = config_table_beside(fcinfo->flinfo->fn_oid);
    // Gone when the DROP was of the extension itself.
    if (OidIsValid(config_table)) {
        remove_setups(config_table, InvalidOid);
    }
    PG_RETURN_VOID();
}

// Before a logical replication worker writes a row of snowflake_partitioned_tables: the row is
// skipped, since a setup belongs to the server that made it. A subscriber that applied them would
// maintain the partitions of a table it only receives, and lose its own setups to the
// publisher's deletes (doc/reference.md "Logical replication").
extern "C" Datum snowflake_keep_setups_local(PG_FUNCTION_ARGS) {
    const auto *trigger_data = reinterpret_cast<TriggerData *>(fcinfo->context);
    const bool is_its_trigger =
        CALLED_AS_TRIGGER(fcinfo) && TRIGGER_FIRED_BEFORE(trigger_data->tg_event) &&
        TRIGGER_FIRED_FOR_ROW(trigger_data->tg_event) &&
        !TRIGGER_FIRED_BY_TRUNCATE(trigger_data->tg_event) &&
        RelationGetRelid(trigger_data->tg_relation) == config_table_beside(fcinfo->flinfo->fn_oid);
    if (!is_its_trigger) {
        ereport(ERROR, (errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
                        errmsg("snowflake_keep_setups_local() is the row trigger before INSERT, "
                               "UPDATE or DELETE on snowflake_partitioned_tables"),
                        errhint("Leave it on snowflake_partitioned_tables, where the extension "
                                "put it.")));
    }
    if (IsLogicalWorker()) {
        return Datum(0);
    }
    // Another session in replica mode (a superuser's bulk load) writes as it asked.
    return PointerGetDatum(TRIGGER_FIRED_BY_UPDATE(trigger_data->tg_event)
                               ? trigger_data->tg_newtuple
                               : trigger_data->tg_trigtuple);
}
