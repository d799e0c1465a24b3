// What the files of the changes room share (src/pg/changes/), beside its door changes.hpp; no
// other room includes it. Include only after postgres.h.
#pragma once

// The root of the relation's partition tree, or the relation itself (tombstones.cpp).
Oid snowflake_tree_root(Oid relation);

extern "C" {
#include "nodes/parsenodes.h"
}

// The installation in this database that the utility hook acts for (partition_moves.cpp): its
// schema and the schema of its tables, quoted, and the owner of its tombstones.
struct ChangesInstallation {
    const char *schema;
    const char *tables_schema;
    Oid owner;
};

// Whether the table is tracked (partition_moves.cpp).
bool snowflake_is_tracked(const ChangesInstallation &installation, Oid table);

// The version column of a tracked table, or nullptr (partition_moves.cpp).
char *snowflake_version_column(const ChangesInstallation &installation, Oid root);

// The refusals of what tracking refuses, done to a tracked table (tracked_refusals.cpp).
[[noreturn]] void snowflake_refuse_foreign_partition(Oid root);
void snowflake_refuse_unlogged_or_foreign_tree(Oid root, Oid partition);
void snowflake_refuse_untrackable_foreign(const ChangesInstallation &installation,
                                          const CreateForeignTableStmt *statement);
void snowflake_refuse_untrackable_create(const ChangesInstallation &installation,
                                         const CreateStmt *statement);
void snowflake_refuse_untrackable_alter(const ChangesInstallation &installation,
                                        const AlterTableStmt *statement);
