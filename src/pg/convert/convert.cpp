// snowflake_convert_column() (version 1.5): turns a serial or identity key into bigint DEFAULT
// snowflake_nextval(), with every column its values can reach; its overload of version 1.6 with a
// type turns such a key, or a bigint key that already holds Snowflake ids, into the snowflake
// type instead. doc/reference.md "Converting a serial or identity column" says what they do;
// doc/design.md "The conversion" says why they are C.
//
// Order: the table is locked first, then every table that holds the key's values is found and
// locked as it is found (a new foreign key to a locked table must wait for its lock), then
// everything is checked, and only then changed. Each ALTER TABLE, each read of the keys and each
// evaluation of a constraint runs as the owner of its table in a security-restricted operation
// with search_path pinned, the way PostgreSQL's maintenance commands do: no code of another role
// runs with the caller's rights. Everything runs in the caller's transaction, so an error at any
// step leaves everything as it was.

extern "C" {
#include "postgres.h"

#include "access/table.h"
#include "catalog/partition.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "parser/parse_func.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"
#include "utils/tuplestore.h"
}

#include "pg/as_owner.hpp"
#include "pg/convert/convert.hpp"
#include "pg/isolation.hpp"
#include "pg/library_objects.hpp"
#include "pg/object_names.hpp"

extern "C" {
PG_FUNCTION_INFO_V1(snowflake_convert_column);
PG_FUNCTION_INFO_V1(snowflake_convert_column_to_type);
}

namespace snowflake_convert {

namespace {

// Runs one statement that alters a table as the table's owner.
void alter_as_owner(Oid relation, const char *statement) {
    (void)run_statement_as({owner_of(relation), kFunctionName, statement, false}, statement);
}

// One row of the report: what was changed, and how.
void add_row(Tuplestorestate *store, TupleDesc tupdesc, const char *object, const char *change) {
    Datum values[2] = {CStringGetTextDatum(object), CStringGetTextDatum(change)};
    bool nulls[2] = {false, false};
    tuplestore_putvalues(store, tupdesc, values, nulls);
}

// The key's default, and whether a sequence feeds it (a default that depends on one).
constexpr char kDefaultQuery[] =
    "SELECT pg_catalog.pg_get_expr(d.adbin, d.adrelid), EXISTS ("
    "SELECT FROM pg_catalog.pg_depend AS dep JOIN pg_catalog.pg_class AS s "
    "ON dep.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass AND s.oid = dep.refobjid "
    "WHERE dep.classid = 'pg_catalog.pg_attrdef'::pg_catalog.regclass AND dep.objid = d.oid "
    "AND s.relkind = 'S') "
    "FROM pg_catalog.pg_attrdef AS d WHERE d.adrelid = $1 AND d.adnum = $2";

// Whether the column is part of a primary key or unique constraint.
constexpr char kKeyConstraintQuery[] =
    "SELECT 1 FROM pg_catalog.pg_constraint WHERE conrelid = $1 AND contype IN ('p', 'u') "
    "AND $2 = ANY (conkey)";

// The table, checked and locked: it must exist and be the caller's (checked before the lock, so
// that a stranger cannot lock it), and be a plain or partitioned table that is no partition.
void lock_table(Oid relation) {
    for (int attempt = 0; attempt < 2; attempt++) {
        HeapTuple tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relation));
        if (!HeapTupleIsValid(tuple)) {
            ereport(ERROR, (errcode(ERRCODE_UNDEFINED_TABLE),
                            errmsg("table with OID %u does not exist", relation),
                            errhint("Name the table: SELECT * FROM "
                                    "snowflake_convert_column('orders', 'id').")));
        }
        const Oid owner = reinterpret_cast<Form_pg_class>(GETSTRUCT(tuple))->relowner;
        ReleaseSysCache(tuple);
        if (!has_privs_of_role(GetUserId(), owner)) {
            ereport(ERROR, (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
                            errmsg("must be owner of table %s", table_text(relation)),
                            errhint("Run the conversion as the table's owner.")));
        }
        if (attempt == 0) {
            LockRelationOid(relation, AccessExclusiveLock);
        }
    }
}

// The oid of the extension's snowflake_nextval(), by the extension's schema, not the search path.
Oid snowflake_nextval_oid(Oid extension_namespace) {
    List *name = list_make2(makeString(get_namespace_name(extension_namespace)),
                            makeString(pstrdup("snowflake_nextval")));
    return LookupFuncName(name, 0, nullptr, false);
}

// Whether the column's default is exactly a call of the extension's snowflake_nextval() (with
// the implicit cast to the column's type, if any): the key then holds Snowflake ids already.
bool default_is_snowflake_nextval(Oid relation, AttrNumber attnum, Oid extension_namespace) {
    Relation table = table_open(relation, NoLock);
    const TupleConstr *constraints = RelationGetDescr(table)->constr;
    const char *expression = nullptr;
    for (int i = 0; constraints != nullptr && i < constraints->num_defval; i++) {
        if (constraints->defval[i].adnum == attnum) {
            expression = pstrdup(constraints->defval[i].adbin);
        }
    }
    table_close(table, NoLock);
    if (expression == nullptr) {
        return false;
    }
    Node *node = strip_implicit_coercions(static_cast<Node *>(stringToNode(expression)));
    return IsA(node, FuncExpr) &&
           reinterpret_cast<FuncExpr *>(node)->funcid ==
               snowflake_nextval_oid(extension_namespace) &&
           reinterpret_cast<FuncExpr *>(node)->args == NIL;
}

// The key's facts, read only once its table is locked, with a refusal for each way it cannot be
// converted to the target type.
KeyFacts read_key(Oid relation, const char *column, AttrNumber *attnum, Oid target,
                  Oid snowflake_type, Oid extension_namespace) {
    HeapTuple class_tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relation));
    const auto *table = reinterpret_cast<Form_pg_class>(GETSTRUCT(class_tuple));
    const char relkind = table->relkind;
    const bool is_partition = table->relispartition;
    KeyFacts key;
    key.owner = table->relowner;
    ReleaseSysCache(class_tuple);
    key.column_text = psprintf("%s.%s", table_text(relation), quote_identifier(column));
    if (is_partition) {
        ereport(
            ERROR,
            (errcode(ERRCODE_WRONG_OBJECT_TYPE), errmsg("%s is a partition", table_text(relation)),
             errdetail("A partition's key is converted with its partitioned table."),
             errhint("Convert the column of the partitioned table: SELECT * FROM "
                     "snowflake_convert_column(%s, %s).",
                     quote_literal_cstr(table_text(get_partition_parent(relation, true))),
                     quote_literal_cstr(column))));
    }
    if (relkind != RELKIND_RELATION && relkind != RELKIND_PARTITIONED_TABLE) {
        ereport(ERROR, (errcode(ERRCODE_WRONG_OBJECT_TYPE),
                        errmsg("%s is not a table", table_text(relation)),
                        errhint("Only the key of a plain or partitioned table can be converted.")));
    }
    HeapTuple attribute_tuple = SearchSysCacheAttName(relation, column);
    if (!HeapTupleIsValid(attribute_tuple) ||
        reinterpret_cast<Form_pg_attribute>(GETSTRUCT(attribute_tuple))->attnum <= 0) {
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_COLUMN),
                        errmsg("column %s does not exist", key.column_text)));
    }
    const auto *attribute = reinterpret_cast<Form_pg_attribute>(GETSTRUCT(attribute_tuple));
    *attnum = attribute->attnum;
    key.type = attribute->atttypid;
    key.identity = attribute->attidentity;
    const int typmod = attribute->atttypmod;
    const bool inherited = attribute->attinhcount > 0;
    ReleaseSysCache(attribute_tuple);
    const bool to_the_type = target != INT8OID;
    const bool snowflake_key = to_the_type && key.type == snowflake_type;
    if (key.type != INT2OID && key.type != INT4OID && key.type != INT8OID && !snowflake_key) {
        ereport(ERROR,
                (errcode(ERRCODE_DATATYPE_MISMATCH),
                 errmsg("column %s is of type %s, not an integer key", key.column_text,
                        format_type_with_typemod(key.type, typmod)),
                 to_the_type ? errhint("Only smallint, integer and bigint keys fed by a sequence "
                                       "or an identity, and bigint and snowflake keys with "
                                       "DEFAULT snowflake_nextval(), can be converted.")
                             : errhint("Only smallint, integer and bigint keys fed by a sequence "
                                       "or an identity can be converted.")));
    }
    if (inherited) {
        ereport(ERROR, (errcode(ERRCODE_WRONG_OBJECT_TYPE),
                        errmsg("column %s is inherited", key.column_text),
                        errdetail("An inherited column is converted with the table it comes from."),
                        errhint("Convert the column of the parent table (its children follow).")));
    }
    Oid types[2] = {OIDOID, INT2OID};
    Datum arguments[2] = {ObjectIdGetDatum(relation), Int16GetDatum(*attnum)};
    run_query(kDefaultQuery, 2, types, arguments, true);
    key.default_expression = first_text();
    bool is_null = true;
    const bool default_uses_sequence =
        SPI_processed > 0 &&
        DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &is_null));
    key.fed_by_snowflake_nextval =
        to_the_type && (key.type == INT8OID || snowflake_key) &&
        default_is_snowflake_nextval(relation, *attnum, extension_namespace);
    if (key.identity == '\0' && !default_uses_sequence && !key.fed_by_snowflake_nextval) {
        ereport(ERROR,
                (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                 errmsg("column %s is not fed by a sequence", key.column_text),
                 errdetail("Its default is %s.",
                           key.default_expression != nullptr ? key.default_expression : "not set"),
                 to_the_type
                     ? errhint("Only serial, bigserial, DEFAULT nextval(...) and identity columns, "
                               "and bigint columns with DEFAULT snowflake_nextval(), are "
                               "converted; set DEFAULT snowflake_nextval() on a bigint column "
                               "that holds Snowflake ids with ALTER TABLE first.")
                     : errhint("Only serial, bigserial, DEFAULT nextval(...) and identity columns "
                               "are converted; set DEFAULT snowflake_nextval() on other columns "
                               "with ALTER TABLE.")));
    }
    if (run_query(kKeyConstraintQuery, 2, types, arguments, true) == 0) {
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("column %s is not part of a primary key or unique constraint",
                               key.column_text),
                        errhint("Add the key first: the conversion is for key columns.")));
    }
    return key;
}

// The ALTER TABLE that changes a column to the target type, as its table's owner. To snowflake it
// casts each value through the type's checking cast, so PostgreSQL rewrites the table and its
// indexes whatever the old type (doc/design.md "The conversion").
void retype_column(Oid relation, const char *column, const KeyPaths &paths,
                   const char *extension_schema) {
    alter_as_owner(relation,
                   psprintf("ALTER TABLE %s ALTER COLUMN %s TYPE %s", table_text(relation),
                            quote_identifier(column),
                            to_snowflake(paths) ? psprintf("%s.snowflake", extension_schema)
                                                : "pg_catalog.int8"));
}

// The changes, once every check passed: the key's feed, its type and its new default, the
// serial's own sequence, then every other column that holds the key's values. A widened column's
// CHECK constraints could only be judged on bigint, so they are judged right after the widening;
// an error there still undoes everything.
void convert_key(Tuplestorestate *store, TupleDesc tupdesc, Oid relation, const char *column,
                 const KeyFacts &key, const KeyPaths &paths, const Root *roots, int root_count,
                 const char *extension_schema, int64 new_id) {
    const char *table = table_text(relation);
    const char *quoted_column = quote_identifier(column);
    Oid sequence = InvalidOid;
    if (key.identity != '\0') {
        const char *change =
            psprintf("identity (%s) removed, and its sequence %s with it",
                     key.identity == ATTRIBUTE_IDENTITY_ALWAYS ? "ALWAYS" : "BY DEFAULT",
                     table_text(owned_sequence(relation, column)));
        alter_as_owner(relation, psprintf("ALTER TABLE %s ALTER COLUMN %s DROP IDENTITY", table,
                                          quoted_column));
        add_row(store, tupdesc, key.column_text, change);
    } else if (!key.fed_by_snowflake_nextval) {
        sequence = owned_sequence(relation, column);
        alter_as_owner(relation, psprintf("ALTER TABLE %s ALTER COLUMN %s DROP DEFAULT", table,
                                          quoted_column));
        add_row(store, tupdesc, key.column_text,
                psprintf("default %s removed", key.default_expression));
    }
    if (key.type != paths.target) {
        retype_column(relation, column, paths, extension_schema);
        if (is_small_integer(key.type)) {
            refuse_unfit_tree(relation, column, new_id);
        }
        add_row(store, tupdesc, key.column_text,
                to_snowflake(paths)
                    ? psprintf("%s changed to snowflake (the table and its indexes were "
                               "rewritten)",
                               format_type_be(key.type))
                    : psprintf("%s widened to bigint (the table and its indexes were rewritten)",
                               format_type_be(key.type)));
    } else if (to_snowflake(paths)) {
        add_row(store, tupdesc, key.column_text, "left as snowflake (not rewritten)");
    }
    if (key.fed_by_snowflake_nextval) {
        add_row(store, tupdesc, key.column_text, "default snowflake_nextval() kept");
    } else {
        alter_as_owner(relation, psprintf("ALTER TABLE %s ALTER COLUMN %s SET DEFAULT "
                                          "%s.snowflake_nextval()",
                                          table, quoted_column, extension_schema));
        add_row(store, tupdesc, key.column_text, "default set to snowflake_nextval()");
    }
    if (OidIsValid(sequence)) {
        const char *users = sequence_users(sequence);
        const char *sequence_text = table_text(sequence);
        if (users == nullptr) {
            alter_as_owner(relation, psprintf("DROP SEQUENCE %s", sequence_text));
            add_row(store, tupdesc, sequence_text,
                    "dropped: it was owned by the column and nothing else used it");
        } else {
            add_row(store, tupdesc, sequence_text, psprintf("kept: still used by %s", users));
        }
    }
    for (int i = 0; i < root_count; i++) {
        const Root &root = roots[i];
        const char *root_column = get_attname(root.relation, root.attnum, false);
        const bool retyped =
            is_small_integer(root.type) || (to_snowflake(paths) && root.type == INT8OID);
        if (!retyped) {
            // The snowflake type by its name alone, as the other rows name it.
            const char *type_name =
                root.type == paths.snowflake_type ? "snowflake" : format_type_be(root.type);
            add_row(store, tupdesc, root.text,
                    to_snowflake(paths)
                        ? psprintf("left as %s (referencing through %s; not rewritten)", type_name,
                                   root.through)
                        : psprintf("left as %s (referencing through %s)", type_name, root.through));
            continue;
        }
        retype_column(root.relation, root_column, paths, extension_schema);
        if (is_small_integer(root.type)) {
            refuse_unfit_tree(root.relation, root_column, new_id);
        }
        add_row(store, tupdesc, root.text,
                to_snowflake(paths)
                    ? psprintf("%s changed to snowflake (referencing through %s; the table and "
                               "its indexes were rewritten)",
                               format_type_be(root.type), root.through)
                    : psprintf("%s widened to bigint (referencing through %s; the table was "
                               "rewritten)",
                               format_type_be(root.type), root.through));
    }
}

// The type's oid in the extension's schema, or InvalidOid (before version 1.6).
Oid extension_type(Oid extension_namespace, const char *name) {
    return GetSysCacheOid2(TYPENAMENSP, Anum_pg_type_oid, CStringGetDatum(name),
                           ObjectIdGetDatum(extension_namespace));
}

// The conversion to the target type, bigint or snowflake, shared by both SQL functions; the
// arguments are checked for NULL by the caller.
Datum convert_column(FunctionCallInfo fcinfo, Oid target) {
    // ALTER TABLE itself reads some of the catalog with the transaction's snapshot, and fails on a
    // foreign key newer than it.
    snowflake_refuse_snapshot_isolation("snowflake_convert_column()");
    const Oid relation = PG_GETARG_OID(0);
    const char *column = NameStr(*PG_GETARG_NAME(1));
    InitMaterializedSRF(fcinfo, 0);
    const auto *result_info = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);
    Tuplestorestate *store = result_info->setResult;
    const TupleDesc tupdesc = result_info->setDesc;

    // Names print and resolve as in a function with SET search_path = pg_catalog, pg_temp.
    const int guc_nest_level = pin_search_path();
    SPI_connect();
    const ExtensionSchema schema = snowflake_extension_schema();
    const char *extension_schema = schema.quoted;
    const Oid extension_namespace = schema.oid;
    const Oid snowflake_type = extension_type(extension_namespace, "snowflake");
    if (target != INT8OID && (!OidIsValid(target) || target != snowflake_type)) {
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("snowflake_convert_column() converts to bigint or snowflake, not %s",
                               OidIsValid(target) ? format_type_be(target) : "-"),
                        errhint("Pass 'bigint' or 'snowflake' (the extension's type) as the third "
                                "argument.")));
    }
    // One id first: it refuses, with what to do, when the library is not preloaded, a node id is
    // unset, the server is a standby or the clock is behind; then no new id could be made. It is
    // also the new id that every table on the key's paths must be able to take.
    run_query(psprintf("SELECT %s.snowflake_nextval()", extension_schema), 0, nullptr, nullptr,
              false);
    bool is_null = true;
    const int64 new_id =
        DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &is_null));

    lock_table(relation);
    AttrNumber attnum = InvalidAttrNumber;
    const KeyFacts key =
        read_key(relation, column, &attnum, target, snowflake_type, extension_namespace);
    KeyPaths paths = follow_key(relation, attnum);
    paths.target = target;
    paths.snowflake_type = snowflake_type;
    refuse_mixed_owners(paths, key.column_text);
    refuse_outgoing_keys(paths, key.column_text);
    refuse_foreign_tables_and_other_parents(paths, key.column_text);
    refuse_unwidenable_types(paths, key.column_text);
    refuse_partition_keys(paths);
    refuse_views_and_policies(paths, key.column_text);
    refuse_shared_identity(relation, column, key);
    refuse_keys_out_of_range(relation, column, key);
    int root_count = 0;
    const Root *roots = referencing_roots(paths, &root_count);
    if (to_snowflake(paths)) {
        refuse_negative_values(roots, root_count, key.column_text);
    }
    // The trees whose columns are already bigint are judged before anything changes.
    for (int i = 0; i < paths.count; i++) {
        const KeyColumn &path = paths.columns[i];
        if (!is_widened(path) && path.relation == path.root) {
            refuse_unfit_tree(path.root, get_attname(path.root, path.root_attnum, false), new_id);
        }
    }
    convert_key(store, tupdesc, relation, column, key, paths, roots, root_count, extension_schema,
                new_id);
    SPI_finish();
    unpin_search_path(guc_nest_level);
    return static_cast<Datum>(0);
}

}  // namespace

}  // namespace snowflake_convert

using snowflake_convert::convert_column;

// The driver of the conversion to bigint (version 1.5), in C so that each table is altered and
// judged as its owner in a security-restricted operation (doc/design.md "The conversion").
extern "C" Datum snowflake_convert_column(PG_FUNCTION_ARGS) {
    if (PG_ARGISNULL(0) || PG_ARGISNULL(1)) {
        ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
                        errmsg("snowflake_convert_column() needs a table and a column"),
                        errhint("Call it as snowflake_convert_column('orders', 'id').")));
    }
    return convert_column(fcinfo, INT8OID);
}

// The conversion to a chosen type, bigint or snowflake (version 1.6).
extern "C" Datum snowflake_convert_column_to_type(PG_FUNCTION_ARGS) {
    if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2)) {
        ereport(ERROR,
                (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
                 errmsg("snowflake_convert_column() needs a table, a column and a type"),
                 errhint("Call it as snowflake_convert_column('orders', 'id', 'snowflake').")));
    }
    return convert_column(fcinfo, PG_GETARG_OID(2));
}
