// The tombstones of a tracked table (version 1.12): an AFTER DELETE row trigger, and an AFTER
// UPDATE one when the key changed, keep the old key with a version from the generator; an AFTER
// TRUNCATE statement trigger keeps one event for the whole table. A partition's tombstones are
// kept under the tracked table at the root of its tree, so that they outlive the partition. They go into
// snowflake_tombstones, which no role but the extension's owner may write: the trigger inserts as
// that owner, in a security-restricted operation (as_owner.hpp), so that a role that may delete
// rows needs no privilege on it. The key columns must be of built-in types or the snowflake type
// (snowflake_track_changes() checks), so no role's code runs as that owner. The error-boundary
// rules are at the top of module.cpp.

extern "C" {
#include "postgres.h"

#include "access/transam.h"
#include "catalog/namespace.h"
#include "catalog/partition.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "replication/logicalworker.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"
#include "utils/rel.h"
#include "utils/typcache.h"

PG_FUNCTION_INFO_V1(snowflake_keep_tombstone);
PG_FUNCTION_INFO_V1(snowflake_keep_changes_local);
PG_FUNCTION_INFO_V1(snowflake_key_row);
}

#include "pg/as_owner.hpp"
#include "pg/changes/changes_parts.hpp"
#include "pg/generation/generation.hpp"
#include "pg/library_objects.hpp"

namespace {

// The kinds of event a tombstone records, as snowflake_changes() reads them.
constexpr char kDeleteKind = 'd';
constexpr char kTruncateKind = 't';

// The most key columns a tombstone keeps; a primary key of more is refused at tracking.
constexpr int kMaxKeyColumns = 8;

// Set while this backend inserts a tombstone of its own, so that a logical replication worker,
// whose tracked tables' triggers fire too, keeps its own tombstones and skips its publisher's.
// An error in between ends the worker, and a backend's next tombstone sets it again.
bool writing_own_tombstone = false;

// Whether a key column's type can be kept in a tombstone: its JSON form reads back the same under
// every session setting, and no role's code runs to write or read it. snowflake_key_columns() in
// the update script to 1.12 holds the same list.
bool is_key_type(Oid type, Oid id_type) {
    switch (type) {
    case INT2OID:
    case INT4OID:
    case INT8OID:
    case NUMERICOID:
    case TEXTOID:
    case VARCHAROID:
    case BPCHAROID:
    case UUIDOID:
    case BOOLOID:
    case DATEOID:
    case TIMESTAMPOID:
    case TIMESTAMPTZOID:
        return true;
    default:
        return type == id_type;
    }
}

// The tombstones table of the extension that owns this trigger function.
Oid tombstones_table(Oid trigger_function) {
    const Oid table =
        snowflake_extension_table(get_func_namespace(trigger_function), "snowflake_tombstones");
    if (!OidIsValid(table)) {
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_TABLE),
                        errmsg("the table snowflake_tombstones of the extension is missing"),
                        errhint("Run ALTER EXTENSION snowflake UPDATE, or drop and create the "
                                "extension again.")));
    }
    return table;
}

// Only the triggers that snowflake_track_changes() creates call this function.
void require_tombstone_trigger(const TriggerData *data) {
    const TriggerEvent event = data->tg_event;
    const bool row_event = TRIGGER_FIRED_FOR_ROW(event) &&
                           (TRIGGER_FIRED_BY_DELETE(event) || TRIGGER_FIRED_BY_UPDATE(event));
    const bool truncate_event = TRIGGER_FIRED_FOR_STATEMENT(event) &&
                                TRIGGER_FIRED_BY_TRUNCATE(event);
    if (!TRIGGER_FIRED_AFTER(event) || !(row_event || truncate_event) ||
        (row_event && (data->tg_trigger->tgnargs < 1 ||
                       data->tg_trigger->tgnargs > kMaxKeyColumns))) {
        ereport(ERROR, (errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
                        errmsg("snowflake_keep_tombstone() must run as an AFTER DELETE or UPDATE "
                               "row trigger with the key columns as its arguments, or an AFTER "
                               "TRUNCATE statement trigger"),
                        errhint("Let snowflake_track_changes() create the trigger.")));
    }
}

// The INSERT of one tombstone: the table, the version, the kind and the key's columns as an
// object built from the parameters that follow.
char *tombstone_insert(Oid table, int key_count, char *const *key_names) {
    StringInfoData sql;
    initStringInfo(&sql);
    appendStringInfo(&sql,
                     "INSERT INTO %s.%s (tracked, version, kind, key) VALUES ($1, $2, $3, ",
                     quote_identifier(get_namespace_name(get_rel_namespace(table))),
                     quote_identifier(get_rel_name(table)));
    if (key_count == 0) {
        appendStringInfoString(&sql, "NULL)");
        return sql.data;
    }
    appendStringInfoString(&sql, "pg_catalog.jsonb_build_object(");
    for (int i = 0; i < key_count; i++) {
        appendStringInfo(&sql, "%s%s, $%d", i > 0 ? ", " : "", quote_literal_cstr(key_names[i]),
                         i + 4);
    }
    appendStringInfoString(&sql, "))");
    return sql.data;
}

// The key columns' values of the row, as parameters from $4 on.
void key_parameters(const TriggerData *data, Oid *types, Datum *values, char *nulls) {
    const TupleDesc desc = RelationGetDescr(data->tg_relation);
    for (int i = 0; i < data->tg_trigger->tgnargs; i++) {
        const int attnum = SPI_fnumber(desc, data->tg_trigger->tgargs[i]);
        if (attnum <= 0) {
            ereport(ERROR,
                    (errcode(ERRCODE_UNDEFINED_COLUMN),
                     errmsg("the key column \"%s\" of %s does not exist",
                            data->tg_trigger->tgargs[i],
                            RelationGetRelationName(data->tg_relation)),
                     errhint("Call snowflake_untrack_changes() and then snowflake_track_changes() "
                             "for the table again.")));
        }
        bool is_null = false;
        types[i] = TupleDescAttr(desc, attnum - 1)->atttypid;
        // A role can create this trigger by hand, naming any column: a type of a role's own
        // would have its output function run as the extension's owner.
        if (!is_key_type(types[i], snowflake_id_type_beside(data->tg_trigger->tgfoid))) {
            ereport(ERROR,
                    (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                     errmsg("the key column \"%s\" of %s is of a type that tombstones cannot keep",
                            data->tg_trigger->tgargs[i],
                            RelationGetRelationName(data->tg_relation)),
                     errhint("Let snowflake_track_changes() create the trigger; it tracks tables "
                             "whose primary key has types it can keep, such as bigint.")));
        }
        values[i] = heap_getattr(data->tg_trigtuple, attnum, desc, &is_null);
        nulls[i] = is_null ? 'n' : ' ';
    }
}

}  // namespace

// The root of the relation's partition tree, or the relation itself: tracking refuses a
// partition, and a tracked table cannot be attached as one (partition_moves.cpp).
Oid snowflake_tree_root(Oid relation) {
    if (!get_rel_relispartition(relation)) {
        return relation;
    }
    return llast_oid(get_partition_ancestors(relation));
}

// Keeps the tombstone of a deleted row, of a row's old key, or of a truncation.
Datum snowflake_keep_tombstone(PG_FUNCTION_ARGS) {
    if (!CALLED_AS_TRIGGER(fcinfo)) {
        ereport(ERROR, (errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
                        errmsg("snowflake_keep_tombstone() must be called as a trigger"),
                        errhint("Let snowflake_track_changes() create the trigger.")));
    }
    const TriggerData *data = reinterpret_cast<TriggerData *>(fcinfo->context);
    require_tombstone_trigger(data);
    // An unlogged table is emptied by crash recovery and a temporary one goes with its session,
    // each without a tombstone, and the second would leave tombstones of no table behind.
    if (data->tg_relation->rd_rel->relpersistence != RELPERSISTENCE_PERMANENT) {
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("%s is unlogged or temporary, and keeps no tombstones",
                               RelationGetRelationName(data->tg_relation)),
                        errhint("Keep tombstones of permanent tables only.")));
    }
    const bool truncation = TRIGGER_FIRED_BY_TRUNCATE(data->tg_event);
    const Oid table = tombstones_table(data->tg_trigger->tgfoid);
    constexpr int kFixed = 3;
    Oid types[kFixed + kMaxKeyColumns] = {OIDOID, INT8OID, CHAROID};
    Datum values[kFixed + kMaxKeyColumns] = {
        ObjectIdGetDatum(snowflake_tree_root(RelationGetRelid(data->tg_relation))),
        Int64GetDatum(snowflake_draw_id()),
        CharGetDatum(truncation ? kTruncateKind : kDeleteKind)};
    char nulls[kFixed + kMaxKeyColumns + 1] = "   ";
    int count = kFixed;
    if (!truncation) {
        key_parameters(data, types + kFixed, values + kFixed, nulls + kFixed);
        count += data->tg_trigger->tgnargs;
    }
    nulls[count] = '\0';
    const char *statement = tombstone_insert(table, count - kFixed, data->tg_trigger->tgargs);
    const RoleStep step{owner_of(table), "snowflake_keep_tombstone()",
                        "keeping a tombstone", false};
    if (SPI_connect() != SPI_OK_CONNECT) {
        elog(ERROR, "snowflake: SPI_connect failed");
    }
    writing_own_tombstone = true;
    run_statement_as(step, statement, count, types, values, nulls);
    writing_own_tombstone = false;
    SPI_finish();
    return Datum(0);
}

// Before a logical replication worker writes a row of snowflake_tracked_tables or
// snowflake_tombstones: a publisher's row is skipped, since the tracking and the tombstones of a
// server are its own. Its tables' OIDs and versions mean nothing here, and a regclass sent as a
// name would land on a table of the same name. The subscriber's own tombstones, which its tracked
// tables' triggers keep as the worker applies changes, are written.
Datum snowflake_keep_changes_local(PG_FUNCTION_ARGS) {
    const auto *data = reinterpret_cast<TriggerData *>(fcinfo->context);
    if (!CALLED_AS_TRIGGER(fcinfo) || !TRIGGER_FIRED_BEFORE(data->tg_event) ||
        !TRIGGER_FIRED_FOR_ROW(data->tg_event)) {
        ereport(ERROR, (errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
                        errmsg("snowflake_keep_changes_local() is a row trigger before INSERT, "
                               "UPDATE or DELETE"),
                        errhint("Leave it on the extension's tables, where the extension put "
                                "it.")));
    }
    if (IsLogicalWorker() && !writing_own_tombstone) {
        return Datum(0);
    }
    return PointerGetDatum(TRIGGER_FIRED_BY_UPDATE(data->tg_event) ? data->tg_newtuple
                                                                    : data->tg_trigtuple);
}

// A row of the table's type with the key's columns from a tombstone and every other column NULL,
// formed directly: a cast or a record function would check the other columns' domains, running
// the table owner's code as the reader and refusing NULL where a domain is NOT NULL.
Datum snowflake_key_row(PG_FUNCTION_ARGS) {
    if (PG_ARGISNULL(1)) {
        PG_RETURN_NULL();
    }
    const Oid row_type = get_fn_expr_argtype(fcinfo->flinfo, 0);
    if (!type_is_rowtype(row_type)) {
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("snowflake_key_row() needs a table's row type"),
                        errhint("snowflake_changes() calls it as snowflake_key_row(NULL::t, key).")));
    }
    Jsonb *key = PG_GETARG_JSONB_P(1);
    const Oid id_type = snowflake_id_type_beside(fcinfo->flinfo->fn_oid);
    TupleDesc desc = lookup_rowtype_tupdesc_copy(row_type, -1);
    Datum *values = static_cast<Datum *>(palloc0(desc->natts * sizeof(Datum)));
    bool *nulls = static_cast<bool *>(palloc(desc->natts * sizeof(bool)));
    for (int i = 0; i < desc->natts; i++) {
        nulls[i] = true;
        const Form_pg_attribute column = TupleDescAttr(desc, i);
        if (column->attisdropped) {
            continue;
        }
        JsonbValue name;
        name.type = jbvString;
        name.val.string.val = NameStr(column->attname);
        name.val.string.len = strlen(NameStr(column->attname));
        const JsonbValue *found = findJsonbValueFromContainer(&key->root, JB_FOBJECT, &name);
        if (found == nullptr || found->type == jbvNull) {
            continue;
        }
        if (!is_key_type(column->atttypid, id_type)) {
            ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                            errmsg("the key column \"%s\" is of a type that tombstones cannot keep",
                                   NameStr(column->attname)),
                            errhint("Track a table whose primary key has types it can keep, such "
                                    "as bigint.")));
        }
        char *text = nullptr;
        if (found->type == jbvString) {
            text = pnstrdup(found->val.string.val, found->val.string.len);
        } else if (found->type == jbvNumeric) {
            text = DatumGetCString(DirectFunctionCall1(numeric_out,
                                                       NumericGetDatum(found->val.numeric)));
        } else if (found->type == jbvBool) {
            text = pstrdup(found->val.boolean ? "true" : "false");
        } else {
            ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                            errmsg("the tombstone's key holds a value of no column type for \"%s\"",
                                   NameStr(column->attname))));
        }
        Oid input = InvalidOid;
        Oid parameter = InvalidOid;
        getTypeInputInfo(column->atttypid, &input, &parameter);
        values[i] = OidInputFunctionCall(input, text, parameter, column->atttypmod);
        nulls[i] = false;
    }
    return HeapTupleGetDatum(heap_form_tuple(desc, values, nulls));
}
