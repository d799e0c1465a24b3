// The paths of a key's values for snowflake_convert_column() (convert.cpp): every column they
// reach through partitions, inheritance children and foreign keys, each table locked as it is
// found, and the facts about a column that the refusals and the steps ask.

extern "C" {
#include "postgres.h"

#include "catalog/pg_constraint.h"
#include "catalog/pg_inherits.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
}

#include <cstdlib>
#include <cstring>

#include "pg/as_owner.hpp"
#include "pg/convert/convert.hpp"
#include "pg/object_names.hpp"

namespace snowflake_convert {

namespace {

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

// The foreign keys whose referenced columns include the column, with the referencing column.
// Partitioned foreign keys come with their clones on each partition; the set keeps each column
// once.
constexpr char kReferencesQuery[] =
    "SELECT c.oid, c.conrelid, k.referencing FROM pg_catalog.pg_constraint AS c "
    "CROSS JOIN LATERAL ROWS FROM (pg_catalog.unnest(c.confkey), pg_catalog.unnest(c.conkey)) "
    "AS k(referenced, referencing) "
    "WHERE c.contype = 'f' AND c.confrelid = $1 AND k.referenced = $2";

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

// In the order of the tables' creation (their oids), then of their columns.
int compare_roots(const void *left, const void *right) {
    const auto *a = static_cast<const Root *>(left);
    const auto *b = static_cast<const Root *>(right);
    if (a->relation != b->relation) {
        return a->relation < b->relation ? -1 : 1;
    }
    return a->attnum - b->attnum;
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

}  // namespace

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

bool is_small_integer(Oid type) {
    return type == INT2OID || type == INT4OID;
}

bool is_widened(const KeyColumn &column) {
    return is_small_integer(column.type);
}

bool is_retyped(const KeyPaths &paths, const KeyColumn &column) {
    return is_small_integer(column.type) || (paths.target != INT8OID && column.type == INT8OID);
}

bool to_snowflake(const KeyPaths &paths) {
    return paths.target != INT8OID;
}

int find_column(const KeyPaths &paths, Oid relation, AttrNumber attnum) {
    for (int i = 0; i < paths.count; i++) {
        if (paths.columns[i].relation == relation && paths.columns[i].attnum == attnum) {
            return i;
        }
    }
    return -1;
}

bool is_key_column(const KeyPaths &paths, const KeyColumn &column) {
    return column.root == paths.columns[0].root &&
           column.root_attnum == paths.columns[0].root_attnum;
}

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

char *first_text() {
    if (SPI_processed == 0) {
        return nullptr;
    }
    return SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
}

char *column_text(Oid relation, AttrNumber attnum) {
    return psprintf("%s.%s", table_text(relation),
                    quote_identifier(get_attname(relation, attnum, false)));
}

char *role_text(Oid role) {
    return GetUserNameFromId(role, false);
}

Oid owned_sequence(Oid relation, const char *column) {
    Oid types[2] = {OIDOID, TEXTOID};
    Datum arguments[2] = {ObjectIdGetDatum(relation), CStringGetTextDatum(column)};
    run_query(kOwnedSequenceQuery, 2, types, arguments, true);
    bool is_null = true;
    const Datum sequence = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &is_null);
    return is_null ? InvalidOid : DatumGetObjectId(sequence);
}

char *sequence_users(Oid sequence) {
    Oid types[1] = {OIDOID};
    Datum arguments[1] = {ObjectIdGetDatum(sequence)};
    run_query(kSequenceUsersQuery, 1, types, arguments, true);
    return first_text();
}

}  // namespace snowflake_convert
