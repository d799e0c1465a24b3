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

#include "access/htup_details.h"
#include "access/sysattr.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/partition.h"
#include "catalog/pg_attribute.h"
#include "catalog/pg_class.h"
#include "catalog/pg_constraint.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "nodes/execnodes.h"
#include "miscadmin.h"
#include "nodes/bitmapset.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parse_func.h"
#include "partitioning/partdesc.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/partcache.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/tuplestore.h"
#include "utils/typcache.h"
}

#include <cstdlib>
#include <cstring>

#include "pg/as_owner.hpp"

extern "C" {
PG_FUNCTION_INFO_V1(snowflake_convert_column);
PG_FUNCTION_INFO_V1(snowflake_convert_column_to_type);
}

namespace {

constexpr char kFunctionName[] = "snowflake_convert_column()";

// A column that holds the key's values: the key itself, a column of a partition or inheritance
// child of a table in the set, or a column whose foreign key references one in the set.
struct KeyColumn {
    Oid relation;
    AttrNumber attnum;
    Oid type;
    Oid root;                // the table whose ALTER TABLE changes this column
    AttrNumber root_attnum;  // the column's number there
    bool tree_followed;      // its root's partitions and children are in the set
};

// A foreign key through which the key's values reach a column of the set.
struct Reference {
    Oid constraint;
    int column;  // index of the referencing column in KeyPaths::columns
};

// Every path the key's values can take, in the order found; columns[0] is the key.
struct KeyPaths {
    KeyColumn *columns;
    int count;
    int capacity;
    Reference *references;
    int reference_count;
    int reference_capacity;
    Oid target;          // the type the columns become: bigint, or the snowflake type
    Oid snowflake_type;  // the extension's snowflake type, InvalidOid before version 1.6
};

// The catalog facts of the key column, read after its table is locked.
struct KeyFacts {
    const char *column_text;  // table.column as the messages show it
    Oid owner;
    Oid type;
    char identity;
    const char *default_expression;  // nullptr without a default
    bool fed_by_snowflake_nextval;   // DEFAULT snowflake_nextval() already: the default is kept
};

// Runs a query as the current user (search_path is pinned) and returns its row count. It reads
// with the latest snapshot, not the calling statement's: that one was taken before the locks
// were waited for, and would miss a foreign key or a key committed meanwhile. ALTER TABLE
// rewrites with the latest too.
uint64 run_query(const char *statement, int argument_count, Oid *argument_types, Datum *arguments,
                 bool read_only) {
    SPIPlanPtr plan = SPI_prepare(statement, argument_count, argument_types);
    if (plan == nullptr) {
        elog(ERROR, "snowflake: could not prepare: %s", statement);
    }
    const int status = SPI_execute_snapshot(plan, arguments, nullptr, GetLatestSnapshot(),
                                            InvalidSnapshot, read_only, false, 0);
    if (status < 0) {
        elog(ERROR, "snowflake: could not run: %s", statement);
    }
    SPI_freeplan(plan);
    return SPI_processed;
}

// The first column of the first row of the last query as text, or nullptr for NULL or no row.
char *first_text() {
    if (SPI_processed == 0) {
        return nullptr;
    }
    return SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
}

// The table as regclass prints it (qualified unless pg_catalog or pg_temp holds it).
char *table_text(Oid relation) {
    return DatumGetCString(DirectFunctionCall1(regclassout, ObjectIdGetDatum(relation)));
}

// A column as the messages and the report show it: table.column, quoted as needed.
char *column_text(Oid relation, AttrNumber attnum) {
    return psprintf("%s.%s", table_text(relation),
                    quote_identifier(get_attname(relation, attnum, false)));
}

// A role's name, for the messages that say whose table is in the way.
char *role_text(Oid role) {
    return GetUserNameFromId(role, false);
}

// Names the table and role of a step that runs as a table's owner, for an error raised in it.
void as_owner_error_context(void *step) {
    errcontext("%s: %s", kFunctionName, static_cast<const char *>(step));
}

// Runs one statement that alters a table as the table's owner.
void alter_as_owner(Oid relation, const char *statement) {
    const Oid owner = owner_of(relation);
    char *step = psprintf("%s, run as %s", statement, quote_identifier(role_text(owner)));
    ErrorContextCallback callback{error_context_stack, as_owner_error_context, step};
    error_context_stack = &callback;
    const OwnerContext context = begin_as_owner(owner);
    if (SPI_execute(statement, false, 0) != SPI_OK_UTILITY) {
        elog(ERROR, "snowflake: could not run: %s", statement);
    }
    end_as_owner(context);
    error_context_stack = callback.previous;
}

// Adds a column to the set unless it is there; returns its index.
int add_column(KeyPaths *paths, Oid relation, AttrNumber attnum) {
    for (int i = 0; i < paths->count; i++) {
        if (paths->columns[i].relation == relation && paths->columns[i].attnum == attnum) {
            return i;
        }
    }
    if (paths->count == paths->capacity) {
        paths->capacity *= 2;
        paths->columns = static_cast<KeyColumn *>(
            repalloc(paths->columns, sizeof(KeyColumn) * static_cast<size_t>(paths->capacity)));
    }
    KeyColumn &column = paths->columns[paths->count];
    column.relation = relation;
    column.attnum = attnum;
    column.type = get_atttype(relation, attnum);
    column.root = InvalidOid;
    column.root_attnum = InvalidAttrNumber;
    column.tree_followed = false;
    return paths->count++;
}

// Remembers a foreign key that reaches a column, for the report's "referencing through".
void add_reference(KeyPaths *paths, Oid constraint, int column) {
    if (paths->reference_count == paths->reference_capacity) {
        paths->reference_capacity *= 2;
        paths->references = static_cast<Reference *>(repalloc(
            paths->references, sizeof(Reference) * static_cast<size_t>(paths->reference_capacity)));
    }
    paths->references[paths->reference_count++] = Reference{constraint, column};
}

// The parents of a table, in the order of its INHERITS or its partition parent.
constexpr char kParentsQuery[] =
    "SELECT inhparent FROM pg_catalog.pg_inherits WHERE inhrelid = $1 ORDER BY inhseqno";

// The foreign keys whose referenced columns include the column, with the referencing column.
// Partitioned foreign keys come with their clones on each partition; the set keeps each column
// once.
constexpr char kReferencesQuery[] =
    "SELECT c.oid, c.conrelid, k.referencing FROM pg_catalog.pg_constraint AS c "
    "CROSS JOIN LATERAL ROWS FROM (pg_catalog.unnest(c.confkey), pg_catalog.unnest(c.conkey)) "
    "AS k(referenced, referencing) "
    "WHERE c.contype = 'f' AND c.confrelid = $1 AND k.referenced = $2";

// The error of a key whose paths hold tables or domains of other roles than its owner.
[[noreturn]] void report_mixed_owners(const char *key_text, Oid owner, const char *others) {
    const char *owner_name = quote_identifier(role_text(owner));
    ereport(
        ERROR,
        (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
         errmsg("the tables that hold the key %s do not all belong to %s", key_text, owner_name),
         errdetail("Owned by other roles: %s. Widening a column makes PostgreSQL check its "
                   "foreign keys, its partitions' constraints and its domains as the role "
                   "that alters the table, with code of the other objects; so they must "
                   "have one owner. Nothing was changed.",
                   others),
         errhint("Give them one owner (ALTER TABLE or ALTER DOMAIN ... OWNER TO %s), or "
                 "drop the foreign keys that reach them, convert, and add the keys back as "
                 "their owner.",
                 owner_name)));
    pg_unreachable();
}

// Refuses, before it is locked, a table that another role than the key's owner owns, as
// refuse_mixed_owners would once all are locked, so that a stranger's call holds none of them.
void refuse_stranger(Oid relation, const KeyColumn &key) {
    HeapTuple tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relation));
    if (!HeapTupleIsValid(tuple)) {
        return;  // dropped meanwhile: the lock that follows finds it gone
    }
    const Oid table_owner = reinterpret_cast<Form_pg_class>(GETSTRUCT(tuple))->relowner;
    ReleaseSysCache(tuple);
    const Oid owner = owner_of(key.relation);
    if (table_owner != owner) {
        report_mixed_owners(column_text(key.relation, key.attnum), owner,
                            psprintf("%s (owned by %s)", table_text(relation),
                                     quote_identifier(role_text(table_owner))));
    }
}

// Finds the table whose ALTER TABLE changes the column: an inherited column is changed only
// through the parent it comes from. Each parent is locked before its catalog is read.
void find_root(KeyColumn *column, const KeyColumn &key) {
    Oid relation = column->relation;
    AttrNumber attnum = column->attnum;
    for (;;) {
        HeapTuple tuple =
            SearchSysCache2(ATTNUM, ObjectIdGetDatum(relation), Int16GetDatum(attnum));
        if (!HeapTupleIsValid(tuple)) {
            elog(ERROR, "snowflake: cache lookup failed for column %d of relation %u", attnum,
                 relation);
        }
        const auto *attribute = reinterpret_cast<Form_pg_attribute>(GETSTRUCT(tuple));
        const int inherited = attribute->attinhcount;
        char *name = pstrdup(NameStr(attribute->attname));
        ReleaseSysCache(tuple);
        if (inherited == 0) {
            break;
        }
        Oid type_oid[1] = {OIDOID};
        Datum relation_argument[1] = {ObjectIdGetDatum(relation)};
        const uint64 parent_count = run_query(kParentsQuery, 1, type_oid, relation_argument, true);
        SPITupleTable *parents = SPI_tuptable;
        Oid next = InvalidOid;
        for (uint64 i = 0; i < parent_count && !OidIsValid(next); i++) {
            bool is_null = true;
            const Oid parent =
                DatumGetObjectId(SPI_getbinval(parents->vals[i], parents->tupdesc, 1, &is_null));
            refuse_stranger(parent, key);
            LockRelationOid(parent, AccessExclusiveLock);
            const AttrNumber parent_attnum = get_attnum(parent, name);
            if (parent_attnum != InvalidAttrNumber) {
                next = parent;
                attnum = parent_attnum;
            }
        }
        if (!OidIsValid(next)) {
            break;
        }
        relation = next;
    }
    column->root = relation;
    column->root_attnum = attnum;
}

// Follows every path of the key's values from columns[0]: up to the table that alters each
// column, down to every partition and inheritance child, and along every foreign key that
// references a column of the set (a chain of keys included). Each table is locked in ACCESS
// EXCLUSIVE mode, as ALTER TABLE would lock it, before its references are read.
KeyPaths follow_key(Oid relation, AttrNumber attnum) {
    KeyPaths paths;
    paths.capacity = 8;
    paths.count = 0;
    paths.columns = static_cast<KeyColumn *>(palloc(sizeof(KeyColumn) * 8));
    paths.reference_capacity = 8;
    paths.reference_count = 0;
    paths.references = static_cast<Reference *>(palloc(sizeof(Reference) * 8));
    add_column(&paths, relation, attnum);
    for (int i = 0; i < paths.count; i++) {
        if (!paths.columns[i].tree_followed) {
            find_root(&paths.columns[i], paths.columns[0]);
            const Oid root = paths.columns[i].root;
            const AttrNumber root_attnum = paths.columns[i].root_attnum;
            const char *root_name = get_attname(root, root_attnum, false);
            ListCell *cell;
            foreach (cell, find_all_inheritors(root, NoLock, nullptr)) {
                refuse_stranger(lfirst_oid(cell), paths.columns[0]);
            }
            List *tree = find_all_inheritors(root, AccessExclusiveLock, nullptr);
            foreach (cell, tree) {
                const Oid member = lfirst_oid(cell);
                const AttrNumber member_attnum = get_attnum(member, root_name);
                if (member_attnum != InvalidAttrNumber) {
                    // The index first: adding may move the array.
                    const int index = add_column(&paths, member, member_attnum);
                    KeyColumn &column = paths.columns[index];
                    column.root = root;
                    column.root_attnum = root_attnum;
                    column.tree_followed = true;
                }
            }
        }
        Oid types[2] = {OIDOID, INT2OID};
        Datum arguments[2] = {ObjectIdGetDatum(paths.columns[i].relation),
                              Int16GetDatum(paths.columns[i].attnum)};
        const uint64 reference_count = run_query(kReferencesQuery, 2, types, arguments, true);
        SPITupleTable *references = SPI_tuptable;
        for (uint64 r = 0; r < reference_count; r++) {
            bool is_null = true;
            const Oid constraint = DatumGetObjectId(
                SPI_getbinval(references->vals[r], references->tupdesc, 1, &is_null));
            const Oid referencing = DatumGetObjectId(
                SPI_getbinval(references->vals[r], references->tupdesc, 2, &is_null));
            const AttrNumber referencing_attnum =
                DatumGetInt16(SPI_getbinval(references->vals[r], references->tupdesc, 3, &is_null));
            // A table of another role is refused before it is locked, so that a stranger's
            // call cannot hold it (refuse_mixed_owners judges again once all are locked).
            refuse_stranger(referencing, paths.columns[0]);
            LockRelationOid(referencing, AccessExclusiveLock);
            // Dropped while the lock was awaited: its foreign key went with it.
            if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(referencing))) {
                continue;
            }
            add_reference(&paths, constraint, add_column(&paths, referencing, referencing_attnum));
        }
    }
    return paths;
}

// The types that cannot hold a Snowflake id and are widened.
bool is_small_integer(Oid type) {
    return type == INT2OID || type == INT4OID;
}

// Whether the column is widened: smallint and integer are; bigint and domains over it are kept.
// A widened column's CHECK constraints can be judged only once it is bigint or snowflake.
bool is_widened(const KeyColumn &column) {
    return is_small_integer(column.type);
}

// Whether ALTER TABLE changes the column's type: to bigint the smaller integers; to snowflake
// bigint too. Domains and columns already of the type are kept.
bool is_retyped(const KeyPaths &paths, const KeyColumn &column) {
    return is_small_integer(column.type) || (paths.target != INT8OID && column.type == INT8OID);
}

// Whether the conversion is to the snowflake type (the overload with a type, version 1.6).
bool to_snowflake(const KeyPaths &paths) {
    return paths.target != INT8OID;
}

// A column of a type other than smallint, integer, bigint, snowflake or a domain over bigint or
// snowflake cannot carry new ids, and a domain over a smaller integer cannot be widened with its
// constraints kept.
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

// The index of a column in the set, or -1.
int find_column(const KeyPaths &paths, Oid relation, AttrNumber attnum) {
    for (int i = 0; i < paths.count; i++) {
        if (paths.columns[i].relation == relation && paths.columns[i].attnum == attnum) {
            return i;
        }
    }
    return -1;
}

// Whether a column of the set is the key itself or its copy in a partition or child.
bool is_key_column(const KeyPaths &paths, const KeyColumn &column) {
    return column.root == paths.columns[0].root &&
           column.root_attnum == paths.columns[0].root_attnum;
}

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

// Every table on the paths must have the key's owner. Widening a column makes PostgreSQL
// validate each foreign key on it again, with a query on the tables at both ends that runs as
// the role running the ALTER TABLE, and the planner runs immutable functions of those tables'
// partial indexes and statistics; a partition's constraints run as its parent's owner. With one
// owner, each ALTER TABLE runs as that owner and no other role's code runs with its rights
// (the foreign keys that leave the paths are refused by refuse_outgoing_keys).
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

// The foreign keys of a column (it references through them), with the referenced column.
constexpr char kOutgoingKeysQuery[] =
    "SELECT c.conname, c.confrelid, k.referenced FROM pg_catalog.pg_constraint AS c "
    "CROSS JOIN LATERAL ROWS FROM (pg_catalog.unnest(c.conkey), pg_catalog.unnest(c.confkey)) "
    "AS k(referencing, referenced) "
    "WHERE c.contype = 'f' AND c.conrelid = $1 AND k.referencing = $2 ORDER BY c.conname";

// A key that references another table could take no new id (the id would not be there), and a
// widened column that references a column off the paths would leave that column too small and
// make PostgreSQL check its foreign key on a table the conversion does not hold.
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

// Inserts could fail and the conversion could not judge them: a foreign table's remote column
// is not widened, and a column inherited from a parent off the key's tree cannot be changed
// without that parent.
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

// PostgreSQL cannot change the type of a column in a partition key; and where the column is one
// of several, or in an expression, the conversion cannot judge which partition takes a new id.
// Refused before anything changes, rather than by ALTER TABLE or by every insert afterwards.
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

// One refusal naming all of them, rather than ALTER TABLE's error on the first.
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

// What else uses a sequence: defaults of other columns, mostly.
constexpr char kSequenceUsersQuery[] =
    "SELECT pg_catalog.string_agg(pg_catalog.pg_describe_object(classid, objid, objsubid), ', ' "
    "ORDER BY 1) FROM pg_catalog.pg_depend "
    "WHERE refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass AND refobjid = $1 "
    "AND deptype = 'n'";

// The sequence owned by the column (a serial's, or an identity's), or InvalidOid.
constexpr char kOwnedSequenceQuery[] =
    "SELECT pg_catalog.pg_get_serial_sequence($1::pg_catalog.regclass::pg_catalog.text, $2)"
    "::pg_catalog.regclass::pg_catalog.oid";

// The sequence that goes with the old feed, to name it and to drop it when nothing else uses it.
Oid owned_sequence(Oid relation, const char *column) {
    Oid types[2] = {OIDOID, TEXTOID};
    Datum arguments[2] = {ObjectIdGetDatum(relation), CStringGetTextDatum(column)};
    run_query(kOwnedSequenceQuery, 2, types, arguments, true);
    bool is_null = true;
    const Datum sequence = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &is_null);
    return is_null ? InvalidOid : DatumGetObjectId(sequence);
}

// What else uses the sequence, or nullptr: it is kept (or the identity refused) while anything
// does.
char *sequence_users(Oid sequence) {
    Oid types[1] = {OIDOID};
    Datum arguments[1] = {ObjectIdGetDatum(sequence)};
    run_query(kSequenceUsersQuery, 1, types, arguments, true);
    return first_text();
}

// Removing an identity drops its sequence, which another default may use: PostgreSQL would
// refuse and suggest a CASCADE that would drop that default.
void refuse_shared_identity(Oid relation, const char *column, const KeyFacts &key) {
    if (key.identity == '\0') {
        return;
    }
    const Oid sequence = owned_sequence(relation, column);
    if (!OidIsValid(sequence)) {
        return;
    }
    const char *users = sequence_users(sequence);
    if (users != nullptr) {
        ereport(ERROR,
                (errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
                 errmsg("the identity sequence %s of %s is also used by %s", table_text(sequence),
                        key.column_text, users),
                 errdetail("Removing the identity drops its sequence, which they need. Nothing "
                           "was changed."),
                 errhint("Give them a sequence of their own first (CREATE SEQUENCE ... START "
                         "past the current value, then ALTER TABLE ... ALTER COLUMN ... SET "
                         "DEFAULT nextval(...)), then convert.")));
    }
}

// A read that must see every row runs as the table's owner with row_security off; a table whose
// policies apply to its owner (FORCE ROW LEVEL SECURITY) is refused first, so that no policy can
// hide a row and the read does not fail on one.
void refuse_hidden_rows(Oid relation, Oid owner) {
    if (check_enable_rls(relation, owner, true) == RLS_ENABLED) {
        const char *table = table_text(relation);
        ereport(ERROR,
                (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
                 errmsg("row-level security hides rows of %s from its owner %s", table,
                        quote_identifier(role_text(owner))),
                 errdetail("The conversion must see every key, and FORCE ROW LEVEL SECURITY "
                           "applies the table's policies to its owner. Nothing was changed."),
                 errhint("In one transaction: ALTER TABLE %s NO FORCE ROW LEVEL SECURITY, "
                         "convert, then ALTER TABLE %s FORCE ROW LEVEL SECURITY.",
                         table, table)));
    }
}

// Runs a query over a table's rows as its owner, with row_security off; what step says names it
// in the context of an error.
void read_as_owner(Oid owner, char *step, const char *query) {
    ErrorContextCallback callback{error_context_stack, as_owner_error_context, step};
    error_context_stack = &callback;
    const OwnerContext context = begin_as_owner(owner);
    (void)set_config_option("row_security", "off", PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE,
                            true, 0, false);
    run_query(query, 0, nullptr, nullptr, true);
    end_as_owner(context);
    error_context_stack = callback.previous;
}

// Old keys must stay below every id the generator can issue from now on, unless the generator
// issued them (a key fed by snowflake_nextval() already), and none may be negative. The read sees
// every key (refuse_hidden_rows).
void refuse_keys_out_of_range(Oid relation, const char *column, const KeyFacts &key,
                              const char *extension_schema) {
    refuse_hidden_rows(relation, key.owner);
    read_as_owner(key.owner,
                  psprintf("reading the keys of %s as %s", key.column_text,
                           quote_identifier(role_text(key.owner))),
                  psprintf("SELECT pg_catalog.min(%1$s)::pg_catalog.int8, "
                           "pg_catalog.max(%1$s)::pg_catalog.int8, "
                           "%2$s.snowflake_min_id(pg_catalog.now()) FROM %3$s",
                           quote_identifier(column), extension_schema, table_text(relation)));
    bool lowest_null = true;
    bool highest_null = true;
    bool bound_null = true;
    const int64 lowest =
        DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &lowest_null));
    const int64 highest = DatumGetInt64(
        SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &highest_null));
    const int64 lowest_new_id =
        DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3, &bound_null));
    if (lowest_null) {
        return;
    }
    if (lowest < 0) {
        ereport(ERROR, (errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
                        errmsg("column %s holds negative keys, down to %lld", key.column_text,
                               static_cast<long long>(lowest)),
                        errdetail("Snowflake ids are never negative; keys are kept as they are."),
                        errhint("Give the rows with negative keys new keys first.")));
    }
    if (!highest_null && highest >= lowest_new_id && !key.fed_by_snowflake_nextval) {
        ereport(ERROR,
                (errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
                 errmsg("column %s holds keys up to %lld, which new Snowflake ids could repeat",
                        key.column_text, static_cast<long long>(highest)),
                 errdetail("New ids start at %lld (snowflake_min_id(now())); every existing key "
                           "must be below it.",
                           static_cast<long long>(lowest_new_id)),
                 errhint("Give the rows with such keys new keys first.")));
    }
}

// Whether a row whose only non-NULL value is the new id in the column passes the expressions
// (an implicitly ANDed list; NULL passes, as in a CHECK). The caller runs it as the table's owner.
bool row_passes(Relation relation, AttrNumber attnum, int64 id, List *expressions) {
    EState *estate = CreateExecutorState();
    ExprContext *econtext = GetPerTupleExprContext(estate);
    TupleTableSlot *slot = MakeSingleTupleTableSlot(RelationGetDescr(relation), &TTSOpsVirtual);
    ExecStoreAllNullTuple(slot);
    slot->tts_values[attnum - 1] = Int64GetDatum(id);
    slot->tts_isnull[attnum - 1] = false;
    econtext->ecxt_scantuple = slot;
    ExprState *state = ExecPrepareCheck(expressions, estate);
    const bool passes = ExecCheck(state, econtext);
    ExecDropSingleTupleTableSlot(slot);
    FreeExecutorState(estate);
    return passes;
}

// Refuses a new id that the table's CHECK constraints on the column alone, or the column's
// domain, reject. A constraint over other columns too cannot be judged without their values and
// is left to the rows that come.
void refuse_rejecting_constraints(Relation relation, AttrNumber attnum, int64 id) {
    TupleConstr *constraints = RelationGetDescr(relation)->constr;
    for (int i = 0; constraints != nullptr && i < constraints->num_check; i++) {
        Node *expression = static_cast<Node *>(stringToNode(constraints->check[i].ccbin));
        Bitmapset *columns = nullptr;
        pull_varattnos(expression, 1, &columns);
        if (bms_num_members(columns) != 1 ||
            !bms_is_member(attnum - FirstLowInvalidHeapAttributeNumber, columns)) {
            continue;
        }
        if (!row_passes(relation, attnum, id, list_make1(expression))) {
            ereport(ERROR, (errcode(ERRCODE_CHECK_VIOLATION),
                            errmsg("new Snowflake ids such as %lld do not fit column %s",
                                   static_cast<long long>(id),
                                   column_text(RelationGetRelid(relation), attnum)),
                            errdetail("Check constraint \"%s\" rejects them. Nothing was changed.",
                                      constraints->check[i].ccname),
                            errhint("Drop or change the constraint so that ids up to "
                                    "snowflake_max_id(...) pass, then convert.")));
        }
    }
    const Oid type = TupleDescAttr(RelationGetDescr(relation), attnum - 1)->atttypid;
    if (getBaseType(type) == type) {
        return;
    }
    // In the context it registers its reset callback in, not on the stack: the callback runs
    // when that context goes, long after this frame.
    auto *domain = static_cast<DomainConstraintRef *>(palloc(sizeof(DomainConstraintRef)));
    InitDomainConstraintRef(type, domain, CurrentMemoryContext, true);
    EState *estate = CreateExecutorState();
    ExprContext *econtext = GetPerTupleExprContext(estate);
    econtext->domainValue_datum = Int64GetDatum(id);
    econtext->domainValue_isNull = false;
    ListCell *cell;
    foreach (cell, domain->constraints) {
        auto *constraint = static_cast<DomainConstraintState *>(lfirst(cell));
        if (constraint->constrainttype == DOM_CONSTRAINT_CHECK &&
            !ExecCheck(constraint->check_exprstate, econtext)) {
            ereport(ERROR,
                    (errcode(ERRCODE_CHECK_VIOLATION),
                     errmsg("new Snowflake ids such as %lld do not fit column %s",
                            static_cast<long long>(id),
                            column_text(RelationGetRelid(relation), attnum)),
                     errdetail("Constraint \"%s\" of its domain %s rejects them. Nothing was "
                               "changed.",
                               constraint->name, format_type_be(type)),
                     errhint("Change the domain's constraint, or the column's type to bigint, "
                             "then convert.")));
        }
    }
    FreeExecutorState(estate);
}

// Follows a new id down a table's tree as an INSERT would: into the one partition that accepts it
// when the table is partitioned by the column alone, into every partition otherwise (another
// column decides), and into every inheritance child (each takes new ids of its own); refuses when
// no partition accepts it or a constraint on the way rejects it. Each table is judged as its
// owner.
void refuse_unfit_tree(Oid table, const char *column, int64 id) {
    const Oid owner = owner_of(table);
    char *step = psprintf("judging a new id in %s as %s", table_text(table),
                          quote_identifier(role_text(owner)));
    ErrorContextCallback callback{error_context_stack, as_owner_error_context, step};
    error_context_stack = &callback;
    const OwnerContext context = begin_as_owner(owner);
    Relation relation = table_open(table, NoLock);
    const AttrNumber attnum = get_attnum(table, column);
    refuse_rejecting_constraints(relation, attnum, id);
    List *next = NIL;
    if (relation->rd_rel->relkind == RELKIND_PARTITIONED_TABLE) {
        PartitionKey key = RelationGetPartitionKey(relation);
        PartitionDesc partitions = RelationGetPartitionDesc(relation, true);
        const bool routed_by_column =
            get_partition_natts(key) == 1 && get_partition_col_attnum(key, 0) == attnum;
        for (int i = 0; i < partitions->nparts; i++) {
            if (!routed_by_column) {
                next = lappend_oid(next, partitions->oids[i]);
                continue;
            }
            Relation partition = table_open(partitions->oids[i], NoLock);
            const bool accepts = row_passes(partition, get_attnum(partitions->oids[i], column), id,
                                            RelationGetPartitionQual(partition));
            table_close(partition, NoLock);
            if (accepts) {
                next = lappend_oid(next, partitions->oids[i]);
                break;
            }
        }
        if (routed_by_column && next == NIL) {
            ereport(ERROR,
                    (errcode(ERRCODE_CHECK_VIOLATION),
                     errmsg("no partition of %s accepts new Snowflake ids such as %lld",
                            table_text(table), static_cast<long long>(id)),
                     errdetail("Every insert would fail. Nothing was changed."),
                     errhint("Add a partition for new ids (FOR VALUES FROM (%lld) TO (MAXVALUE), "
                             "or ranges of snowflake_min_id() and snowflake_max_id() of the "
                             "months to come), then convert.",
                             static_cast<long long>(id))));
        }
    } else {
        next = find_inheritance_children(table, NoLock);
    }
    table_close(relation, NoLock);
    end_as_owner(context);
    error_context_stack = callback.previous;
    ListCell *cell;
    foreach (cell, next) {
        refuse_unfit_tree(lfirst_oid(cell), column, id);
    }
}

// For qsort: the names in the report in a stable order.
int compare_names(const void *left, const void *right) {
    return strcmp(*static_cast<char *const *>(left), *static_cast<char *const *>(right));
}

// The constraint names, sorted, of the foreign keys (declared ones, not their clones on
// partitions) through which the key reaches the columns that one ALTER TABLE changes; read before
// the foreign keys are rebuilt under new oids.
char *references_text(const KeyPaths &paths, Oid root, AttrNumber root_attnum) {
    char **names = static_cast<char **>(palloc(sizeof(char *) * (paths.reference_count + 1)));
    int count = 0;
    for (int r = 0; r < paths.reference_count; r++) {
        const KeyColumn &column = paths.columns[paths.references[r].column];
        if (column.root != root || column.root_attnum != root_attnum) {
            continue;
        }
        HeapTuple tuple =
            SearchSysCache1(CONSTROID, ObjectIdGetDatum(paths.references[r].constraint));
        if (!HeapTupleIsValid(tuple)) {
            continue;
        }
        const auto *constraint = reinterpret_cast<Form_pg_constraint>(GETSTRUCT(tuple));
        if (!OidIsValid(constraint->conparentid)) {
            names[count++] = pstrdup(NameStr(constraint->conname));
        }
        ReleaseSysCache(tuple);
    }
    qsort(names, static_cast<size_t>(count), sizeof(char *), compare_names);
    StringInfoData text;
    initStringInfo(&text);
    for (int i = 0; i < count; i++) {
        if (i == 0 || strcmp(names[i], names[i - 1]) != 0) {
            appendStringInfo(&text, "%s%s", text.len > 0 ? ", " : "", names[i]);
        }
    }
    return text.data;
}

// A column, other than the key's, that one ALTER TABLE changes, with what the report says of it;
// read before anything changes (widening the key rebuilds the foreign keys under new oids).
struct Root {
    Oid relation;
    AttrNumber attnum;
    Oid type;
    const char *text;     // table.column
    const char *through;  // the foreign keys that reach it
};

// In the order of the tables' creation (their oids), then of their columns.
int compare_roots(const void *left, const void *right) {
    const auto *a = static_cast<const Root *>(left);
    const auto *b = static_cast<const Root *>(right);
    if (a->relation != b->relation) {
        return a->relation < b->relation ? -1 : 1;
    }
    return a->attnum - b->attnum;
}

// Each column another ALTER TABLE than the key's changes, once, with its report, before any change.
Root *referencing_roots(const KeyPaths &paths, int *count) {
    Root *roots = static_cast<Root *>(palloc(sizeof(Root) * paths.count));
    *count = 0;
    const KeyColumn &key = paths.columns[0];
    for (int i = 1; i < paths.count; i++) {
        const KeyColumn &column = paths.columns[i];
        if (column.root == key.root && column.root_attnum == key.root_attnum) {
            continue;
        }
        bool seen = false;
        for (int j = 0; j < *count && !seen; j++) {
            seen = roots[j].relation == column.root && roots[j].attnum == column.root_attnum;
        }
        if (!seen) {
            roots[(*count)++] =
                Root{column.root, column.root_attnum, get_atttype(column.root, column.root_attnum),
                     column_text(column.root, column.root_attnum),
                     references_text(paths, column.root, column.root_attnum)};
        }
    }
    qsort(roots, static_cast<size_t>(*count), sizeof(Root), compare_roots);
    return roots;
}

// The cast to snowflake refuses a negative value, which would fail the ALTER TABLE midway: each
// column that becomes snowflake is read first, with its partitions and children, as its owner
// (the key's own values are judged by refuse_keys_out_of_range). Only a foreign key that is NOT
// VALID, or a column of a child that takes its own values, can hold one.
void refuse_negative_values(const Root *roots, int root_count, const char *key_text) {
    for (int i = 0; i < root_count; i++) {
        const Root &root = roots[i];
        if (!is_small_integer(root.type) && root.type != INT8OID) {
            continue;
        }
        const Oid owner = owner_of(root.relation);
        refuse_hidden_rows(root.relation, owner);
        read_as_owner(owner,
                      psprintf("reading the values of %s as %s", root.text,
                               quote_identifier(role_text(owner))),
                      psprintf("SELECT pg_catalog.min(%s)::pg_catalog.int8 FROM %s",
                               quote_identifier(get_attname(root.relation, root.attnum, false)),
                               table_text(root.relation)));
        bool is_null = true;
        const int64 lowest =
            DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &is_null));
        if (!is_null && lowest < 0) {
            ereport(ERROR,
                    (errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
                     errmsg("column %s holds negative values, down to %lld, which type snowflake "
                            "cannot hold",
                            root.text, static_cast<long long>(lowest)),
                     errdetail("It holds values of the key %s (referencing through %s); a "
                               "Snowflake id is never negative. Nothing was changed.",
                               key_text, root.through),
                     errhint("Set those values to NULL or to keys that exist (a foreign key that "
                             "is NOT VALID lets others in), then convert.")));
        }
    }
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

constexpr char kKeyConstraintQuery[] =
    "SELECT 1 FROM pg_catalog.pg_constraint WHERE conrelid = $1 AND contype IN ('p', 'u') "
    "AND $2 = ANY (conkey)";

constexpr char kExtensionSchemaQuery[] =
    "SELECT pg_catalog.quote_ident(n.nspname), n.oid FROM pg_catalog.pg_extension AS e "
    "JOIN pg_catalog.pg_namespace AS n ON n.oid = e.extnamespace WHERE e.extname = 'snowflake'";

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
    const bool to_snowflake = target != INT8OID;
    const bool snowflake_key = to_snowflake && key.type == snowflake_type;
    if (key.type != INT2OID && key.type != INT4OID && key.type != INT8OID && !snowflake_key) {
        ereport(ERROR,
                (errcode(ERRCODE_DATATYPE_MISMATCH),
                 errmsg("column %s is of type %s, not an integer key", key.column_text,
                        format_type_with_typemod(key.type, typmod)),
                 to_snowflake ? errhint("Only smallint, integer and bigint keys fed by a sequence "
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
        to_snowflake && (key.type == INT8OID || snowflake_key) &&
        default_is_snowflake_nextval(relation, *attnum, extension_namespace);
    if (key.identity == '\0' && !default_uses_sequence && !key.fed_by_snowflake_nextval) {
        ereport(ERROR,
                (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                 errmsg("column %s is not fed by a sequence", key.column_text),
                 errdetail("Its default is %s.",
                           key.default_expression != nullptr ? key.default_expression : "not set"),
                 to_snowflake
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
    // The conversion must see the tables as they are once its locks are held; ALTER TABLE itself
    // reads some of the catalog with the transaction's snapshot, and fails on a foreign key newer
    // than it.
    if (IsolationUsesXactSnapshot()) {
        ereport(ERROR,
                (errcode(ERRCODE_INVALID_TRANSACTION_STATE),
                 errmsg("snowflake_convert_column() cannot run in a REPEATABLE READ or "
                        "SERIALIZABLE transaction"),
                 errdetail("It must read the tables as they are once its locks are held, and "
                           "this transaction's snapshot may be older. Nothing was changed."),
                 errhint("Run it in a READ COMMITTED transaction (the default): BEGIN "
                         "ISOLATION LEVEL READ COMMITTED.")));
    }
    const Oid relation = PG_GETARG_OID(0);
    const char *column = NameStr(*PG_GETARG_NAME(1));
    InitMaterializedSRF(fcinfo, 0);
    const auto *result_info = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);
    Tuplestorestate *store = result_info->setResult;
    const TupleDesc tupdesc = result_info->setDesc;

    // Names print and resolve as in a function with SET search_path = pg_catalog, pg_temp.
    const int guc_nest_level = NewGUCNestLevel();
    (void)set_config_option("search_path", kPinnedSearchPath, PGC_USERSET, PGC_S_SESSION,
                            GUC_ACTION_SAVE, true, 0, false);
    SPI_connect();
    run_query(kExtensionSchemaQuery, 0, nullptr, nullptr, true);
    const char *extension_schema = first_text();
    if (extension_schema == nullptr) {
        elog(ERROR, "snowflake: the extension is not installed in this database");
    }
    bool is_null = true;
    const Oid extension_namespace =
        DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &is_null));
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
    refuse_keys_out_of_range(relation, column, key, extension_schema);
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
    AtEOXact_GUC(false, guc_nest_level);
    return static_cast<Datum>(0);
}

}  // namespace

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
