// What the files of time partitions share (partition_parts.hpp): the extension's objects, the
// lock of a table with the checks of its owner and kind, its setup, the report, and the
// refusals of a transaction or an interval that cannot make partitions.

extern "C" {
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"
}

#include "core/partition_plan.hpp"
#include "pg/as_owner.hpp"
#include "pg/compat.hpp"
#include "pg/isolation.hpp"
#include "pg/library_objects.hpp"
#include "pg/object_names.hpp"
#include "pg/partitions/partition_parts.hpp"

namespace {

// Whether a type lives in a temporary schema, and goes with its session.
bool is_temporary_type(Oid type) {
    HeapTuple tuple = SearchSysCache1(TYPEOID, ObjectIdGetDatum(type));
    if (!HeapTupleIsValid(tuple)) {
        return false;
    }
    const Oid schema = reinterpret_cast<Form_pg_type>(GETSTRUCT(tuple))->typnamespace;
    ReleaseSysCache(tuple);
    return isAnyTempNamespace(schema);
}

// Whether a column of the table is of a temporary type (dropped columns have none).
bool has_column_of_temporary_type(Oid relation, int column_count) {
    for (AttrNumber column = 1; column <= column_count; column++) {
        if (is_temporary_type(get_atttype(relation, column))) {
            return true;
        }
    }
    return false;
}

}  // namespace

namespace snowflake_partitions {

using snowflake::PartitionUnit;

// Runs one statement of a table's maintenance as the table's owner; with row_security off for a
// read that must see every row. Returns the row count.
uint64 run_as_owner(const Report &report, Oid owner, const char *statement, int argument_count,
                    Oid *argument_types, Datum *arguments, const char *nulls, bool see_every_row) {
    return run_statement_as({owner, report.function_name, statement, see_every_row}, statement,
                            argument_count, argument_types, arguments, nulls);
}

// The extension's schema and the objects of it that the statements name.
Extension find_extension() {
    const ExtensionSchema schema = snowflake_extension_schema();
    Extension extension;
    extension.schema = schema.quoted;
    extension.snowflake_type = GetSysCacheOid2(
        TYPENAMENSP, Anum_pg_type_oid, CStringGetDatum("snowflake"), ObjectIdGetDatum(schema.oid));
    extension.config_table = snowflake_extension_table(schema.oid, "snowflake_partitioned_tables");
    if (!OidIsValid(extension.config_table)) {
        elog(ERROR, "snowflake: the configuration table snowflake_partitioned_tables is missing");
    }
    extension.config_table_text = qualified_table_text(extension.config_table);
    return extension;
}

// The table, checked and locked: the caller must have the privileges of its owner (checked
// before the lock, so that a stranger cannot lock it, and again once it is held). Its
// ShareUpdateExclusiveLock conflicts with itself, so maintenance of one table is serialised, and
// not with inserts, updates or deletes. Without wait, a table another session holds is left
// (false), so that a call over many tables never waits while it holds locks on others.
bool lock_parent(Oid relation, const char *function_name, bool wait) {
    for (int attempt = 0; attempt < 2; attempt++) {
        HeapTuple tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relation));
        if (!HeapTupleIsValid(tuple)) {
            ereport(ERROR, (errcode(ERRCODE_UNDEFINED_TABLE),
                            errmsg("table with OID %u does not exist", relation),
                            errhint("Name the table: SELECT * FROM %.*s('events', ...).",
                                    static_cast<int>(strlen(function_name)) - 2, function_name)));
        }
        const auto *form = reinterpret_cast<Form_pg_class>(GETSTRUCT(tuple));
        const Oid owner = form->relowner;
        const char kind = form->relkind;
        const bool is_partition = form->relispartition;
        const bool is_temporary = form->relpersistence == RELPERSISTENCE_TEMP ||
                                  is_temporary_type(form->reloftype) ||
                                  has_column_of_temporary_type(relation, form->relnatts);
        ReleaseSysCache(tuple);
        if (!has_privs_of_role(GetUserId(), owner)) {
            ereport(ERROR,
                    (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
                     errmsg("must be owner of table %s", table_text(relation)),
                     errhint("Run %s as the table's owner, or as a member of the owner's role.",
                             function_name)));
        }
        if (is_temporary) {
            ereport(ERROR,
                    (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                     errmsg("%s is a temporary table, or is typed by or has a column of a "
                            "temporary type",
                            table_text(relation)),
                     errdetail("It goes with its session, unseen by the event trigger that "
                               "removes a dropped table's setup, and maintenance runs in other "
                               "sessions."),
                     errhint("Partition a permanent or unlogged table of permanent types.")));
        }
        if (kind != RELKIND_PARTITIONED_TABLE || is_partition) {
            ereport(ERROR,
                    (errcode(ERRCODE_WRONG_OBJECT_TYPE),
                     errmsg("%s is not a partitioned table", table_text(relation)),
                     errhint("Create it with PARTITION BY RANGE (id) on its bigint or snowflake "
                             "key, then call %s.",
                             function_name)));
        }
        if (attempt == 0 && wait) {
            LockRelationOid(relation, ShareUpdateExclusiveLock);
        } else if (attempt == 0 &&
                   !ConditionalLockRelationOid(relation, ShareUpdateExclusiveLock)) {
            return false;
        }
    }
    return true;
}

// One row of the report.
void add_row(const Report &report, Oid parent, const char *partition, const char *action) {
    Datum values[3] = {ObjectIdGetDatum(parent),
                       partition == nullptr ? Datum(0) : CStringGetTextDatum(partition),
                       CStringGetTextDatum(action)};
    bool nulls[3] = {false, partition == nullptr, false};
    tuplestore_putvalues(report.store, report.tupdesc, values, nulls);
}

// The setup of a table from the configuration table, read once its lock is held and with a new
// snapshot (not read-only), so that a setup committed while the lock was awaited is the one
// applied; false if it has none.
bool read_setup(const Extension &extension, Oid parent, Setup *setup) {
    Oid types[1] = {OIDOID};
    Datum values[1] = {ObjectIdGetDatum(parent)};
    if (SPI_execute_with_args(
            psprintf("SELECT every, ahead, retain, time_zone, drop_expired FROM %s WHERE "
                     "parent::pg_catalog.oid OPERATOR(pg_catalog.=) $1",
                     extension.config_table_text),
            1, types, values, nullptr, false, 0) != SPI_OK_SELECT) {
        elog(ERROR, "snowflake: could not read snowflake_partitioned_tables");
    }
    if (SPI_processed == 0) {
        return false;
    }
    HeapTuple row = SPI_tuptable->vals[0];
    const TupleDesc description = SPI_tuptable->tupdesc;
    bool is_null = true;
    setup->parent = parent;
    setup->every = datumCopy(SPI_getbinval(row, description, 1, &is_null), false, sizeof(Interval));
    const Interval *every = DatumGetIntervalP(setup->every);
    if (!snowflake::partition_unit_of(every->month, every->day, every->time, &setup->unit)) {
        char intervals[snowflake::kPartitionIntervalListSize];
        (void)snowflake::partition_interval_list("", intervals, sizeof(intervals));
        ereport(ERROR,
                (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                 errmsg("the setup of %s in snowflake_partitioned_tables has an interval that is "
                        "not %s",
                        table_text(parent), intervals),
                 errhint("Set the table up again with snowflake_partition_table() rather than "
                         "writing the configuration table.")));
    }
    setup->ahead = DatumGetInt32(SPI_getbinval(row, description, 2, &is_null));
    const Datum retain = SPI_getbinval(row, description, 3, &is_null);
    setup->has_retain = !is_null;
    setup->retain = is_null ? Datum(0) : datumCopy(retain, false, sizeof(Interval));
    setup->time_zone = SPI_getvalue(row, description, 4);
    setup->drop_expired = DatumGetBool(SPI_getbinval(row, description, 5, &is_null));
    return true;
}

// The report's columns, for a run whose report is not a function's result.
TupleDesc report_columns() {
    TupleDesc columns = CreateTemplateTupleDesc(3);
    TupleDescInitEntry(columns, 1, "parent", REGCLASSOID, -1, 0);
    TupleDescInitEntry(columns, 2, "partition", TEXTOID, -1, 0);
    TupleDescInitEntry(columns, 3, "action", TEXTOID, -1, 0);
    snowflake_finalize_tuple_desc(columns);
    return columns;
}

// Opens the report: the rows the function returns, kept in a tuplestore.
Report open_report(FunctionCallInfo fcinfo, const char *function_name) {
    InitMaterializedSRF(fcinfo, 0);
    const auto *result_info = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);
    return Report{result_info->setResult, result_info->setDesc, function_name};
}

// Refuses a transaction that cannot maintain partitions, before anything is done: a read-only one
// or a standby's (every call may create, detach or drop partitions, and write its setup), and a
// REPEATABLE READ or SERIALIZABLE one (the partitions must be read as they are once the lock is
// held).
void refuse_unfit_transaction(const char *function_name) {
    if (RecoveryInProgress()) {
        ereport(ERROR, (errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
                        errmsg("%s cannot run on a standby", function_name),
                        errhint("Run it on the primary: the partitions it makes reach the "
                                "standbys with the WAL.")));
    }
    if (XactReadOnly) {
        ereport(ERROR, (errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
                        errmsg("%s cannot run in a read-only transaction", function_name),
                        errhint("Run it in a read-write transaction: BEGIN READ WRITE, or SET "
                                "default_transaction_read_only = off first.")));
    }
    snowflake_refuse_snapshot_isolation(function_name);
}

// The message and the hint name the intervals of the core's table, and so never another.
PartitionUnit unit_of_argument(Datum every, const char *function_name) {
    const Interval *interval = DatumGetIntervalP(every);
    PartitionUnit unit = PartitionUnit::kMonth;
    if (!snowflake::partition_unit_of(interval->month, interval->day, interval->time, &unit)) {
        char intervals[snowflake::kPartitionIntervalListSize];
        char quoted[snowflake::kPartitionIntervalListSize];
        (void)snowflake::partition_interval_list("", intervals, sizeof(intervals));
        (void)snowflake::partition_interval_list("'", quoted, sizeof(quoted));
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("%s partitions by %s, not %s", function_name, intervals,
                               DatumGetCString(DirectFunctionCall1(interval_out, every))),
                        errhint("Pass %s.", quoted)));
    }
    return unit;
}

}  // namespace snowflake_partitions
