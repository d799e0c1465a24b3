// The refusals of what snowflake_track_changes() refuses, done once a table is tracked (version
// 1.12): a foreign or unlogged partition, SET UNLOGGED, an inheritance child, and dropping the
// primary key, a key column or the version column. Each would let rows go or change without a
// version or a tombstone. The utility hook (partition_moves.cpp) calls them before the
// statement runs. The error-boundary rules are at the top of module.cpp.

extern "C" {
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/partition.h"
#include "catalog/pg_class.h"
#include "catalog/pg_constraint.h"
#include "catalog/pg_index.h"
#include "catalog/pg_inherits.h"
#include "nodes/parsenodes.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
}

#include <cstring>

#include "pg/changes/changes_parts.hpp"
#include "pg/object_names.hpp"

namespace {

// The refusal of a change that tracking would have refused: rows could then go or change without
// a version or a tombstone.
[[noreturn]] void refuse_untrackable(Oid root, const char *change) {
    const char *table = get_rel_name(root);
    ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                    errmsg("%s is not supported on the tracked table %s", change, table),
                    errdetail("Its rows could then go or change without reaching its readers."),
                    errhint("Call snowflake_untrack_changes(%s) first, change the table, and "
                            "track it again; its readers then copy it again.",
                            quote_literal_cstr(qualified_table_text(root)))));
}

// Whether dropping the column drops the primary key: it is one of the key's index columns,
// INCLUDE columns too, since the index depends on each.
bool in_primary_key(Oid table, const char *column) {
    Oid constraint = InvalidOid;
    (void)get_primary_key_attnos(table, true, &constraint);
    const AttrNumber attnum = get_attnum(table, column);
    if (!OidIsValid(constraint) || attnum == InvalidAttrNumber) {
        return false;
    }
    HeapTuple tuple =
        SearchSysCache1(INDEXRELID, ObjectIdGetDatum(get_constraint_index(constraint)));
    if (!HeapTupleIsValid(tuple)) {
        return false;
    }
    const auto *index = reinterpret_cast<Form_pg_index>(GETSTRUCT(tuple));
    bool found = false;
    for (int i = 0; i < index->indnatts; i++) {
        found = found || index->indkey.values[i] == attnum;
    }
    ReleaseSysCache(tuple);
    return found;
}

// Whether the constraint of that name on the table is its primary key.
bool is_primary_key(Oid table, const char *name) {
    const Oid constraint = get_relation_constraint_oid(table, name, true);
    Oid primary = InvalidOid;
    (void)get_primary_key_attnos(table, true, &primary);
    return OidIsValid(constraint) && constraint == primary;
}

}  // namespace

// A foreign table's rows are read by connecting elsewhere as whoever reads: the extension's owner
// would, to keep their tombstones when it leaves.
[[noreturn]] void snowflake_refuse_foreign_partition(Oid root) {
    ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                    errmsg("a foreign table cannot become a partition of the tracked table %s",
                           get_rel_name(root)),
                    errhint("Keep the partitions of a tracked table local.")));
}

// An attached partition and its own partitions must all be permanent local tables.
void snowflake_refuse_unlogged_or_foreign_tree(Oid root, Oid partition) {
    ListCell *cell;
    foreach (cell, find_all_inheritors(partition, NoLock, nullptr)) {
        const Oid member = lfirst_oid(cell);
        if (get_rel_relkind(member) == RELKIND_FOREIGN_TABLE) {
            snowflake_refuse_foreign_partition(root);
        }
        if (get_rel_persistence(member) != RELPERSISTENCE_PERMANENT) {
            refuse_untrackable(root, "an unlogged partition");
        }
    }
}

// CREATE FOREIGN TABLE ... PARTITION OF a tracked table, or INHERITS one.
void snowflake_refuse_untrackable_foreign(const ChangesInstallation &installation,
                                          const CreateForeignTableStmt *statement) {
    ListCell *cell;
    foreach (cell, statement->base.inhRelations) {
        const Oid parent = RangeVarGetRelid(lfirst_node(RangeVar, cell), NoLock, true);
        if (!OidIsValid(parent) ||
            !snowflake_is_tracked(installation, snowflake_tree_root(parent))) {
            continue;
        }
        if (statement->base.partbound == nullptr) {
            refuse_untrackable(snowflake_tree_root(parent), "an inheritance child");
        }
        snowflake_refuse_foreign_partition(snowflake_tree_root(parent));
    }
}

// CREATE TABLE ... PARTITION OF a tracked table, unlogged, and CREATE TABLE ... INHERITS one.
void snowflake_refuse_untrackable_create(const ChangesInstallation &installation,
                                         const CreateStmt *statement) {
    ListCell *cell;
    foreach (cell, statement->inhRelations) {
        const Oid parent = RangeVarGetRelid(lfirst_node(RangeVar, cell), NoLock, true);
        if (!OidIsValid(parent)) {
            continue;
        }
        const Oid root = snowflake_tree_root(parent);
        const bool unlogged = statement->relation->relpersistence != RELPERSISTENCE_PERMANENT;
        if ((statement->partbound == nullptr || unlogged) &&
            snowflake_is_tracked(installation, root)) {
            refuse_untrackable(root, statement->partbound == nullptr
                                         ? "an inheritance child"
                                         : "an unlogged or temporary partition");
        }
    }
}

// ALTER TABLE of a tracked table or of a partition of one: SET UNLOGGED, INHERIT a tracked
// table, and dropping its primary key, a key column or the version column.
void snowflake_refuse_untrackable_alter(const ChangesInstallation &installation,
                                        const AlterTableStmt *statement) {
    const Oid relation = RangeVarGetRelid(statement->relation, NoLock, true);
    if (!OidIsValid(relation)) {
        return;
    }
    const Oid root = snowflake_tree_root(relation);
    ListCell *cell;
    foreach (cell, statement->cmds) {
        const AlterTableCmd *command = lfirst_node(AlterTableCmd, cell);
        if (command->subtype == AT_AddInherit) {
            const Oid parent = RangeVarGetRelid(castNode(RangeVar, command->def), NoLock, true);
            if (OidIsValid(parent) &&
                snowflake_is_tracked(installation, snowflake_tree_root(parent))) {
                refuse_untrackable(snowflake_tree_root(parent), "an inheritance child");
            }
            continue;
        }
        const bool unlogged = command->subtype == AT_SetUnLogged;
        const bool drops_key =
            command->subtype == AT_DropConstraint && is_primary_key(relation, command->name);
        const bool drops_column = command->subtype == AT_DropColumn;
        if (!(unlogged || drops_key || drops_column) || !snowflake_is_tracked(installation, root)) {
            continue;
        }
        if (unlogged) {
            refuse_untrackable(root, "SET UNLOGGED");
        }
        if (drops_key) {
            refuse_untrackable(root, "dropping the primary key");
        }
        const char *version = snowflake_version_column(installation, root);
        const bool drops_version = version != nullptr && strcmp(version, command->name) == 0;
        if (in_primary_key(relation, command->name) || drops_version) {
            refuse_untrackable(root, "dropping a key column or the version column");
        }
    }
}
