// Rows that enter or leave a tracked table without a row trigger (version 1.12). A utility hook
// sees TRUNCATE of a partition (named, or reached through CASCADE), DROP TABLE of a partition and
// ALTER TABLE ... DETACH PARTITION. Before the statement runs, it takes the locks PostgreSQL
// would take, in PostgreSQL's order, and keeps a tombstone for each row of the partition. Rows
// that enter by ATTACH PARTITION are stamped once the attach is done. It refuses DETACH ...
// CONCURRENTLY of a tracked table's partition, whose second transaction no hook can reach, ATTACH
// of a tracked table as a partition, whose tombstones would then belong to another tree, and a
// foreign table as a partition of a tracked one, whose rows the extension's owner would read.
// What snowflake_track_changes() refuses, done once the table is tracked, it refuses through
// tracked_refusals.cpp. What still reaches no reader is listed in doc/reference.md "Following
// changes". The error-boundary rules are at the top of module.cpp.

extern "C" {
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/heap.h"
#include "catalog/namespace.h"
#include "catalog/partition.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/parsenodes.h"
#include "storage/lmgr.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
}

#include "pg/as_owner.hpp"
#include "pg/changes/changes.hpp"
#include "pg/changes/changes_parts.hpp"
#include "pg/library_objects.hpp"
#include "pg/object_names.hpp"

namespace {

constexpr char kHookName[] = "snowflake's hook of tracked tables";

ProcessUtility_hook_type previous_utility_hook = nullptr;

// The installation, or false where this database has none of version 1.12 or later.
bool find_installation(ChangesInstallation *found) {
    ExtensionSchema extension;
    if (!snowflake_find_extension_schema(&extension)) {
        return false;
    }
    const Oid schema = extension.oid;
    const Oid tombstones = snowflake_extension_table(schema, "snowflake_tombstones");
    if (!OidIsValid(tombstones)) {
        return false;
    }
    found->schema = extension.quoted;
    found->tables_schema = quote_identifier(get_namespace_name(get_rel_namespace(tombstones)));
    found->owner = owner_of(tombstones);
    return true;
}

// Whether a relation that exists is a partition.
bool is_partition(Oid relation) {
    return OidIsValid(relation) && get_rel_relispartition(relation);
}

// Runs one statement of the hook with the relation as $1, as the extension's owner; returns the
// first column of its one row, or nullptr. The caller connected SPI.
char *run_for(const ChangesInstallation &installation, const char *what, const char *statement,
              Oid relation) {
    const RoleStep step{installation.owner, kHookName, what, true};
    Oid types[1] = {REGCLASSOID};
    Datum values[1] = {ObjectIdGetDatum(relation)};
    if (run_statement_as(step, statement, 1, types, values) != 1) {
        return nullptr;
    }
    return SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
}

// A tombstone for each row of a partition whose rows leave its tracked tree; nothing where the
// tree is not tracked. The partition is locked.
void keep_leaving_rows(const ChangesInstallation &installation, Oid partition) {
    SPI_connect();
    run_for(installation, "keeping a tombstone for each row of a partition that leaves",
            psprintf("SELECT %s.snowflake_keep_leaving_rows($1)", installation.schema), partition);
    SPI_finish();
}

// The same relation under the name once its locks are held, or an error: a rename meanwhile
// would have the statement act on a relation whose rows this hook did not keep.
void require_same_relation(const RangeVar *name, Oid locked) {
    if (RangeVarGetRelid(name, NoLock, true) != locked) {
        ereport(ERROR, (errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
                        errmsg("the table \"%s\" was renamed or dropped while the statement waited "
                               "for its lock",
                               name->relname),
                        errhint("Run the statement again.")));
    }
}

// TRUNCATE: the partitions it empties, named or reached through CASCADE, each with the lock
// TRUNCATE takes; a partition under another emptied one is kept with it.
void before_truncate(const ChangesInstallation &installation, const TruncateStmt *statement) {
    List *emptied = NIL;
    ListCell *cell;
    foreach (cell, statement->relations) {
        const RangeVar *name = lfirst_node(RangeVar, cell);
        const Oid relation = RangeVarGetRelid(name, NoLock, true);
        if (!OidIsValid(relation) ||
            pg_class_aclcheck(relation, GetUserId(), ACL_TRUNCATE) != ACLCHECK_OK) {
            continue;
        }
        LockRelationOid(relation, AccessExclusiveLock);
        require_same_relation(name, relation);
        emptied = list_append_unique_oid(emptied, relation);
        if (name->inh) {
            emptied = list_concat_unique_oid(
                emptied, find_all_inheritors(relation, AccessExclusiveLock, nullptr));
        }
    }
    while (statement->behavior == DROP_CASCADE) {
        List *referencing = list_difference_oid(heap_truncate_find_FKs(emptied), emptied);
        if (referencing == NIL) {
            break;
        }
        foreach (cell, referencing) {
            LockRelationOid(lfirst_oid(cell), AccessExclusiveLock);
        }
        emptied = list_concat(emptied, referencing);
    }
    foreach (cell, emptied) {
        const Oid relation = lfirst_oid(cell);
        if (!is_partition(relation) ||
            list_member_oid(emptied, get_partition_parent(relation, false))) {
            continue;
        }
        keep_leaving_rows(installation, relation);
    }
}

// DROP TABLE: each partition it drops, locked after its parent, as DROP locks them.
void before_drop(const ChangesInstallation &installation, const DropStmt *statement) {
    ListCell *cell;
    foreach (cell, statement->objects) {
        const RangeVar *name = makeRangeVarFromNameList(static_cast<List *>(lfirst(cell)));
        const Oid relation = RangeVarGetRelid(name, NoLock, true);
        if (!is_partition(relation) || !has_privs_of_role(GetUserId(), owner_of(relation))) {
            continue;
        }
        LockRelationOid(get_partition_parent(relation, false), AccessExclusiveLock);
        LockRelationOid(relation, AccessExclusiveLock);
        require_same_relation(name, relation);
        keep_leaving_rows(installation, relation);
    }
}

// ALTER TABLE ... DETACH PARTITION and ATTACH PARTITION: the detached partition's rows are kept
// as tombstones; the partitions to stamp after an attach are returned.
List *before_alter(const ChangesInstallation &installation, const AlterTableStmt *statement) {
    List *attached = NIL;
    ListCell *cell;
    foreach (cell, statement->cmds) {
        const AlterTableCmd *command = lfirst_node(AlterTableCmd, cell);
        if (command->subtype != AT_AttachPartition && command->subtype != AT_DetachPartition) {
            continue;
        }
        const auto *partition_command = castNode(PartitionCmd, command->def);
        const Oid parent = RangeVarGetRelid(statement->relation, NoLock, true);
        const Oid partition = RangeVarGetRelid(partition_command->name, NoLock, true);
        if (!OidIsValid(parent) || !OidIsValid(partition)) {
            continue;
        }
        const Oid root = snowflake_tree_root(parent);
        if (command->subtype == AT_AttachPartition) {
            if (get_rel_relkind(partition) == RELKIND_FOREIGN_TABLE &&
                snowflake_is_tracked(installation, root)) {
                snowflake_refuse_foreign_partition(root);
            }
            if (snowflake_is_tracked(installation, partition)) {
                ereport(ERROR,
                        (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                         errmsg("%s is tracked, and a tracked table cannot become a partition",
                                get_rel_name(partition)),
                         errdetail("Its readers follow it by its own versions and tombstones."),
                         errhint("Call snowflake_untrack_changes() for it first; rows attached "
                                 "to a tracked table reach its readers as new versions.")));
            }
            if (snowflake_is_tracked(installation, root)) {
                snowflake_refuse_unlogged_or_foreign_tree(root, partition);
                attached = lappend_oid(attached, partition);
            }
            continue;
        }
        if (!snowflake_is_tracked(installation, root)) {
            continue;
        }
        if (partition_command->concurrent) {
            ereport(ERROR,
                    (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                     errmsg("DETACH PARTITION CONCURRENTLY is not supported on the tracked table "
                            "%s",
                            get_rel_name(root)),
                     errdetail("Its rows must reach the table's readers as deletes, which its "
                               "second transaction cannot keep."),
                     errhint("Detach it without CONCURRENTLY.")));
        }
        if (!has_privs_of_role(GetUserId(), owner_of(parent))) {
            continue;
        }
        LockRelationOid(parent, AccessExclusiveLock);
        LockRelationOid(partition, AccessExclusiveLock);
        require_same_relation(statement->relation, parent);
        require_same_relation(partition_command->name, partition);
        keep_leaving_rows(installation, partition);
    }
    return attached;
}

// After an attach: every row of the partition gets a version, by an update that the stamp
// trigger, cloned onto it by the attach, turns into one. Run as the partition's owner, whose
// triggers it fires.
void stamp_attached(const ChangesInstallation &installation, Oid partition) {
    const char *column = snowflake_version_column(installation, snowflake_tree_root(partition));
    if (column == nullptr) {
        return;
    }
    SPI_connect();
    const RoleStep step{owner_of(partition), kHookName,
                        "stamping the rows of an attached partition", true};
    run_statement_as(
        step, psprintf("UPDATE %s SET %s = NULL",
                       quote_qualified_identifier(get_namespace_name(get_rel_namespace(partition)),
                                                  get_rel_name(partition)),
                       quote_identifier(column)));
    SPI_finish();
}

// Whether the statement is one the hook looks into, before any catalog is read.
bool concerns_partitions(Node *tree) {
    if (IsA(tree, TruncateStmt)) {
        return true;
    }
    if (IsA(tree, DropStmt)) {
        const ObjectType type = castNode(DropStmt, tree)->removeType;
        return type == OBJECT_TABLE || type == OBJECT_FOREIGN_TABLE;
    }
    if (IsA(tree, CreateForeignTableStmt)) {
        return true;
    }
    if (IsA(tree, CreateStmt)) {
        return castNode(CreateStmt, tree)->inhRelations != NIL;
    }
    if (IsA(tree, AlterTableStmt)) {
        ListCell *cell;
        foreach (cell, castNode(AlterTableStmt, tree)->cmds) {
            switch (lfirst_node(AlterTableCmd, cell)->subtype) {
                case AT_AttachPartition:
                case AT_DetachPartition:
                case AT_SetUnLogged:
                case AT_AddInherit:
                case AT_DropConstraint:
                case AT_DropColumn:
                    return true;
                default:
                    break;
            }
        }
    }
    return false;
}

// The hook: the work before the statement, the statement, the stamps after it.
void track_partition_moves(PlannedStmt *planned, const char *query, bool read_only_tree,
                           ProcessUtilityContext context, ParamListInfo parameters,
                           QueryEnvironment *environment, DestReceiver *destination,
                           QueryCompletion *completion) {
    Node *tree = planned->utilityStmt;
    List *attached = NIL;
    ChangesInstallation installation;
    const bool look =
        concerns_partitions(tree) && IsTransactionState() && find_installation(&installation);
    if (look && IsA(tree, TruncateStmt)) {
        before_truncate(installation, castNode(TruncateStmt, tree));
    } else if (look && IsA(tree, DropStmt)) {
        before_drop(installation, castNode(DropStmt, tree));
    } else if (look && IsA(tree, CreateForeignTableStmt)) {
        snowflake_refuse_untrackable_foreign(installation, castNode(CreateForeignTableStmt, tree));
    } else if (look && IsA(tree, CreateStmt)) {
        snowflake_refuse_untrackable_create(installation, castNode(CreateStmt, tree));
    } else if (look) {
        snowflake_refuse_untrackable_alter(installation, castNode(AlterTableStmt, tree));
        attached = before_alter(installation, castNode(AlterTableStmt, tree));
    }
    if (previous_utility_hook != nullptr) {
        previous_utility_hook(planned, query, read_only_tree, context, parameters, environment,
                              destination, completion);
    } else {
        standard_ProcessUtility(planned, query, read_only_tree, context, parameters, environment,
                                destination, completion);
    }
    ListCell *cell;
    foreach (cell, attached) {
        stamp_attached(installation, lfirst_oid(cell));
    }
}

}  // namespace

// Read as the extension's owner, who may read every row of the tracking.
bool snowflake_is_tracked(const ChangesInstallation &installation, Oid table) {
    SPI_connect();
    const bool tracked = run_for(installation, "reading the tracked tables",
                                 psprintf("SELECT true FROM %s.snowflake_tracked_tables AS t "
                                          "WHERE t.tracked OPERATOR(pg_catalog.=) $1",
                                          installation.tables_schema),
                                 table) != nullptr;
    SPI_finish();
    return tracked;
}

// Copied out of SPI's memory, which SPI_finish() frees.
char *snowflake_version_column(const ChangesInstallation &installation, Oid root) {
    MemoryContext caller = CurrentMemoryContext;
    SPI_connect();
    const char *column =
        run_for(installation, "reading the version column",
                psprintf("SELECT t.version_column::text FROM %s.snowflake_tracked_tables AS t "
                         "WHERE t.tracked OPERATOR(pg_catalog.=) $1",
                         installation.tables_schema),
                root);
    char *copy = column != nullptr ? MemoryContextStrdup(caller, column) : nullptr;
    SPI_finish();
    return copy;
}

// Installed by _PG_init in every backend that loads the library.
void snowflake_install_changes_hook() {
    previous_utility_hook = ProcessUtility_hook;
    ProcessUtility_hook = track_partition_moves;
}
