// The refusals of snowflake_convert_column() (convert.cpp): everything that would make the
// conversion fail halfway, issue an id that may exist, or run another role's code with the
// caller's rights, judged before anything changes (doc/reference.md "Converting a serial or
// identity column" lists them). This file judges the key's paths; value_refusals.cpp judges the
// values stored and the new id.

extern "C" {
#include "postgres.h"

#include "access/table.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "optimizer/optimizer.h"
#include "partitioning/partdesc.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/partcache.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/syscache.h"
#include "utils/typcache.h"
}

#include "pg/as_owner.hpp"
#include "pg/convert/convert.hpp"
#include "pg/object_names.hpp"

namespace snowflake_convert {

namespace {

// Names each domain of the type, down to its base type, that another role owns: its checks run
// as whoever judges or rewrites a value of it, the conversion's owner here.
void add_foreign_domains(Oid type, Oid owner, StringInfo others, List **named) {
    for (;;) {
        HeapTuple tuple = SearchSysCache1(TYPEOID, ObjectIdGetDatum(type));
        if (!HeapTupleIsValid(tuple)) {
            return;
        }
        const auto *form = reinterpret_cast<Form_pg_type>(GETSTRUCT(tuple));
        const bool domain = form->typtype == TYPTYPE_DOMAIN;
        const Oid type_owner = form->typowner;
        const Oid base = form->typbasetype;
        ReleaseSysCache(tuple);
        if (!domain) {
            return;
        }
        if (type_owner != owner && !list_member_oid(*named, type)) {
            *named = lappend_oid(*named, type);
            appendStringInfo(others, "%sdomain %s (owned by %s)", others->len > 0 ? ", " : "",
                             format_type_be(type), quote_identifier(role_text(type_owner)));
        }
        type = base;
    }
}

// The foreign keys of a column (it references through them), with the referenced column.
constexpr char kOutgoingKeysQuery[] =
    "SELECT c.conname, c.confrelid, k.referenced FROM pg_catalog.pg_constraint AS c "
    "CROSS JOIN LATERAL ROWS FROM (pg_catalog.unnest(c.conkey), pg_catalog.unnest(c.confkey)) "
    "AS k(referencing, referenced) "
    "WHERE c.contype = 'f' AND c.conrelid = $1 AND k.referencing = $2 ORDER BY c.conname";

// Whether the column is one of the partition key's columns or used in one of its expressions.
bool in_partition_key(PartitionKey key, AttrNumber attnum) {
    for (int i = 0; i < get_partition_natts(key); i++) {
        if (get_partition_col_attnum(key, i) == attnum) {
            return true;
        }
    }
    Bitmapset *columns = nullptr;
    pull_varattnos(reinterpret_cast<Node *>(get_partition_exprs(key)), 1, &columns);
    return bms_is_member(attnum - FirstLowInvalidHeapAttributeNumber, columns);
}

// What PostgreSQL cannot carry through a change of type, on every retyped column of every table
// (a sibling partition's view included), named at once: views and rules, policies, triggers
// (a WHEN condition or UPDATE OF), publications (a WHERE or a column list), functions with a
// SQL-standard body (BEGIN ATOMIC) and generated columns (whose expression, a default of another
// column, depends on the column).
constexpr char kBlockersQuery[] =
    "SELECT pg_catalog.string_agg(DISTINCT "
    "pg_catalog.pg_describe_object(dep.classid, dep.objid, 0), ', ') "
    "FROM ROWS FROM (pg_catalog.unnest($1::pg_catalog.oid[]), "
    "pg_catalog.unnest($2::pg_catalog.int2[])) "
    "AS m(relation, attnum) "
    "JOIN pg_catalog.pg_depend AS dep "
    "ON dep.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass "
    "AND dep.refobjid = m.relation AND dep.refobjsubid = m.attnum "
    "WHERE dep.classid IN ('pg_catalog.pg_rewrite'::pg_catalog.regclass, "
    "'pg_catalog.pg_policy'::pg_catalog.regclass, 'pg_catalog.pg_trigger'::pg_catalog.regclass, "
    "'pg_catalog.pg_publication_rel'::pg_catalog.regclass, "
    "'pg_catalog.pg_proc'::pg_catalog.regclass) "
    "OR (dep.classid = 'pg_catalog.pg_attrdef'::pg_catalog.regclass AND dep.deptype = 'n')";

}  // namespace

void refuse_unwidenable_types(const KeyPaths &paths, const char *key_text) {
    for (int i = 1; i < paths.count; i++) {
        const KeyColumn &column = paths.columns[i];
        if (is_small_integer(column.type) || column.type == INT8OID ||
            column.type == paths.snowflake_type) {
            continue;
        }
        const Oid base = getBaseType(column.type);
        if (base == INT8OID || (OidIsValid(base) && base == paths.snowflake_type)) {
            continue;
        }
        ereport(ERROR,
                (errcode(ERRCODE_DATATYPE_MISMATCH),
                 errmsg("column %s, which holds values of the key %s, is of type %s, over %s",
                        column_text(column.relation, column.attnum), key_text,
                        format_type_be(column.type), format_type_be(base)),
                 errdetail("A domain over a smaller integer cannot be widened to bigint with its "
                           "constraints. Nothing was changed."),
                 errhint("Change the column to bigint or to a domain over bigint first (ALTER "
                         "TABLE ... ALTER COLUMN ... TYPE ...), then convert.")));
    }
}

void refuse_mixed_owners(const KeyPaths &paths, const char *key_text) {
    const Oid owner = owner_of(paths.columns[0].relation);
    StringInfoData others;
    initStringInfo(&others);
    for (int i = 1; i < paths.count; i++) {
        const Oid relation = paths.columns[i].relation;
        bool named = relation == paths.columns[0].relation;
        for (int j = 1; j < i && !named; j++) {
            named = paths.columns[j].relation == relation;
        }
        const Oid table_owner = owner_of(relation);
        if (!named && table_owner != owner) {
            appendStringInfo(&others, "%s%s (owned by %s)", others.len > 0 ? ", " : "",
                             table_text(relation), quote_identifier(role_text(table_owner)));
        }
    }
    List *named_domains = NIL;
    for (int i = 0; i < paths.count; i++) {
        add_foreign_domains(paths.columns[i].type, owner, &others, &named_domains);
    }
    if (others.len > 0) {
        report_mixed_owners(key_text, owner, others.data);
    }
}

void refuse_outgoing_keys(const KeyPaths &paths, const char *key_text) {
    for (int i = 0; i < paths.count; i++) {
        const KeyColumn &column = paths.columns[i];
        const bool is_key = is_key_column(paths, column);
        if (!is_key && !is_retyped(paths, column)) {
            continue;
        }
        Oid types[2] = {OIDOID, INT2OID};
        Datum arguments[2] = {ObjectIdGetDatum(column.relation), Int16GetDatum(column.attnum)};
        const uint64 count = run_query(kOutgoingKeysQuery, 2, types, arguments, true);
        for (uint64 r = 0; r < count; r++) {
            HeapTuple row = SPI_tuptable->vals[r];
            const TupleDesc description = SPI_tuptable->tupdesc;
            bool is_null = true;
            const char *name = SPI_getvalue(row, description, 1);
            const Oid referenced = DatumGetObjectId(SPI_getbinval(row, description, 2, &is_null));
            const AttrNumber referenced_attnum =
                DatumGetInt16(SPI_getbinval(row, description, 3, &is_null));
            const char *target = column_text(referenced, referenced_attnum);
            if (is_key) {
                ereport(ERROR,
                        (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                         errmsg("the key %s references %s through the foreign key %s", key_text,
                                target, quote_identifier(name)),
                         errdetail("A new Snowflake id would not be in %s, so every insert would "
                                   "fail. Nothing was changed.",
                                   target),
                         errhint("Convert the key of %s instead (its values reach this column), "
                                 "or drop the foreign key first.",
                                 table_text(referenced))));
            }
            if (find_column(paths, referenced, referenced_attnum) < 0) {
                const char *widened = column_text(column.relation, column.attnum);
                ereport(
                    ERROR,
                    (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                     errmsg("column %s, which holds values of the key %s, also references "
                            "%s through the foreign key %s",
                            widened, key_text, target, quote_identifier(name)),
                     errdetail("%s would stay %s and new ids would not be in it: inserts of "
                               "them would fail. Nothing was changed.",
                               target, format_type_be(get_atttype(referenced, referenced_attnum))),
                     errhint("Drop the foreign key %s, convert, then widen %s and add the "
                             "key back.",
                             quote_identifier(name), target)));
            }
        }
    }
}

void refuse_foreign_tables_and_other_parents(const KeyPaths &paths, const char *key_text) {
    for (int i = 0; i < paths.count; i++) {
        const KeyColumn &column = paths.columns[i];
        if (get_rel_relkind(column.relation) == RELKIND_FOREIGN_TABLE) {
            ereport(ERROR,
                    (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                     errmsg("%s, which holds values of the key %s, is a foreign table",
                            table_text(column.relation), key_text),
                     errdetail("The column of its remote table would not be widened. Nothing was "
                               "changed."),
                     errhint("Detach it (ALTER TABLE ... NO INHERIT ... or DETACH PARTITION), "
                             "convert, widen the remote column, then attach it again.")));
        }
        Oid type_oid[1] = {OIDOID};
        Datum relation_argument[1] = {ObjectIdGetDatum(column.relation)};
        const uint64 parent_count = run_query(kParentsQuery, 1, type_oid, relation_argument, true);
        SPITupleTable *parents = SPI_tuptable;
        const char *name = get_attname(column.relation, column.attnum, false);
        for (uint64 p = 0; p < parent_count; p++) {
            bool is_null = true;
            const Oid parent =
                DatumGetObjectId(SPI_getbinval(parents->vals[p], parents->tupdesc, 1, &is_null));
            const AttrNumber parent_attnum = get_attnum(parent, name);
            if (parent_attnum == InvalidAttrNumber) {
                continue;
            }
            const int index = find_column(paths, parent, parent_attnum);
            if (index >= 0 && paths.columns[index].root == column.root &&
                paths.columns[index].root_attnum == column.root_attnum) {
                continue;
            }
            ereport(
                ERROR,
                (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                 errmsg("column %s, which holds values of the key %s, is also inherited "
                        "from %s",
                        column_text(column.relation, column.attnum), key_text, table_text(parent)),
                 errdetail("PostgreSQL changes the type of a column inherited from several "
                           "parents only with all of them, and %s is not changed with %s. "
                           "Nothing was changed.",
                           table_text(parent), table_text(column.root)),
                 errhint("Detach it from that parent (ALTER TABLE %s NO INHERIT %s), "
                         "convert, then attach it again once the parent's column is bigint.",
                         table_text(column.relation), table_text(parent))));
        }
    }
}

void refuse_partition_keys(const KeyPaths &paths) {
    for (int i = 0; i < paths.count; i++) {
        const KeyColumn &column = paths.columns[i];
        if (get_rel_relkind(column.relation) != RELKIND_PARTITIONED_TABLE) {
            continue;
        }
        Relation relation = table_open(column.relation, NoLock);
        PartitionKey key = RelationGetPartitionKey(relation);
        const bool in_key = in_partition_key(key, column.attnum);
        const bool alone =
            get_partition_natts(key) == 1 && get_partition_col_attnum(key, 0) == column.attnum;
        table_close(relation, NoLock);
        if (in_key && to_snowflake(paths) && is_retyped(paths, column)) {
            ereport(
                ERROR,
                (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                 errmsg("column %s cannot be changed to snowflake: it is in the partition key of "
                        "%s",
                        column_text(column.relation, column.attnum), table_text(column.relation)),
                 errdetail("PostgreSQL cannot change the type of a partition key column. Nothing "
                           "was changed."),
                 errhint("Keep the ids bigint (convert with the type bigint, or cast in queries: "
                         "id::snowflake is written as a string in JSON), or create a table "
                         "partitioned by a snowflake column, move the rows there, then convert "
                         "its key.")));
        }
        if (in_key && is_widened(column)) {
            ereport(
                ERROR,
                (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                 errmsg("column %s cannot be widened: it is in the partition key of %s",
                        column_text(column.relation, column.attnum), table_text(column.relation)),
                 errdetail("PostgreSQL cannot change the type of a partition key column, and "
                           "its integer bounds cannot hold a Snowflake id. Nothing was "
                           "changed."),
                 errhint("Create a table partitioned by a bigint column with partitions for "
                         "Snowflake ids, move the rows there, then convert it.")));
        }
        if (in_key && !alone) {
            ereport(
                ERROR,
                (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                 errmsg("column %s is in the partition key of %s with other columns or in an "
                        "expression",
                        column_text(column.relation, column.attnum), table_text(column.relation)),
                 errdetail("The conversion cannot tell whether a partition takes new Snowflake "
                           "ids; if none does, every insert fails. Nothing was changed."),
                 errhint("Partition %s by the column alone, or by other columns only (a new "
                         "table, with the rows moved there), then convert.",
                         table_text(column.relation))));
        }
    }
}

void refuse_views_and_policies(const KeyPaths &paths, const char *key_text) {
    Datum *relations = static_cast<Datum *>(palloc(sizeof(Datum) * paths.count));
    Datum *attnums = static_cast<Datum *>(palloc(sizeof(Datum) * paths.count));
    int retyped = 0;
    for (int i = 0; i < paths.count; i++) {
        if (is_retyped(paths, paths.columns[i])) {
            relations[retyped] = ObjectIdGetDatum(paths.columns[i].relation);
            attnums[retyped] = Int16GetDatum(paths.columns[i].attnum);
            retyped++;
        }
    }
    if (retyped == 0) {
        return;
    }
    Oid types[2] = {OIDARRAYOID, INT2ARRAYOID};
    Datum arguments[2] = {PointerGetDatum(construct_array_builtin(relations, retyped, OIDOID)),
                          PointerGetDatum(construct_array_builtin(attnums, retyped, INT2OID))};
    run_query(kBlockersQuery, 2, types, arguments, true);
    const char *blockers = first_text();
    if (blockers != nullptr) {
        ereport(ERROR,
                (errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
                 to_snowflake(paths)
                     ? errmsg("cannot change the key %s or the columns that reference it to "
                              "snowflake",
                              key_text)
                     : errmsg("cannot widen the key %s or the columns that reference it", key_text),
                 errdetail("In the way: %s. Nothing was changed.", blockers),
                 errhint("Drop them (or the table from the publication), convert, then create "
                         "them again: PostgreSQL cannot change the type of a column they "
                         "use.")));
    }
}

}  // namespace snowflake_convert
