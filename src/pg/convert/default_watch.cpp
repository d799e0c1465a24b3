// A warning when ALTER TABLE takes snowflake_nextval() away from a column's default (version
// 1.12). A framework's migration may put a sequence back on a converted key (Django does at a
// change of the key's field). New keys then come from the sequence: they follow the largest key,
// carry other servers' node bits after 4,096 rows and reach no reader that follows the table by
// id. The statement still runs: the warning names the column and the safe way back. The
// error-boundary rules are at the top of module.cpp.

extern "C" {
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/pg_attrdef.h"
#include "catalog/pg_depend.h"
#include "catalog/pg_proc.h"
#include "nodes/parsenodes.h"
#include "tcop/utility.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"
}

#include "pg/convert/convert.hpp"
#include "pg/library_objects.hpp"
#include "pg/object_names.hpp"

namespace {

ProcessUtility_hook_type previous_utility_hook = nullptr;

// A column whose default called snowflake_nextval() before the statement.
struct WatchedColumn {
    Oid relation;
    AttrNumber attnum;
};

// What a column's default calls or reads, as pg_depend records it: every function and sequence
// the expression uses, so a cast around a call or a call inside COALESCE counts too.
struct DefaultSources {
    bool draws_ids;       // it calls this library's snowflake_nextval()
    bool reads_sequence;  // it reads a sequence
};

DefaultSources default_sources(Oid relation, AttrNumber attnum) {
    DefaultSources sources = {false, false};
    const Oid attrdef = GetAttrDefaultOid(relation, attnum);
    if (!OidIsValid(attrdef)) {
        return sources;
    }
    Relation depend = table_open(DependRelationId, AccessShareLock);
    ScanKeyData keys[2];
    ScanKeyInit(&keys[0], Anum_pg_depend_classid, BTEqualStrategyNumber, F_OIDEQ,
                ObjectIdGetDatum(AttrDefaultRelationId));
    ScanKeyInit(&keys[1], Anum_pg_depend_objid, BTEqualStrategyNumber, F_OIDEQ,
                ObjectIdGetDatum(attrdef));
    SysScanDesc scan = systable_beginscan(depend, DependDependerIndexId, true, nullptr, 2, keys);
    HeapTuple tuple;
    while (HeapTupleIsValid(tuple = systable_getnext(scan))) {
        const auto *row = reinterpret_cast<Form_pg_depend>(GETSTRUCT(tuple));
        if (row->refclassid == ProcedureRelationId &&
            snowflake_is_library_function(row->refobjid, "snowflake_nextval")) {
            sources.draws_ids = true;
        } else if (row->refclassid == RelationRelationId &&
                   get_rel_relkind(row->refobjid) == RELKIND_SEQUENCE) {
            sources.reads_sequence = true;
        }
    }
    systable_endscan(scan);
    table_close(depend, AccessShareLock);
    return sources;
}

// The columns whose default the statement sets or drops and that draw ids now. The names are
// resolved without a lock, as the statement will resolve them: a rename meanwhile costs at most
// a warning.
List *columns_to_watch(const AlterTableStmt *statement) {
    List *watched = NIL;
    Oid relation = InvalidOid;
    ListCell *cell;
    foreach (cell, statement->cmds) {
        const AlterTableCmd *command = lfirst_node(AlterTableCmd, cell);
        if (command->subtype != AT_ColumnDefault || command->name == nullptr) {
            continue;
        }
        if (!OidIsValid(relation)) {
            relation = RangeVarGetRelid(statement->relation, NoLock, true);
        }
        if (!OidIsValid(relation)) {
            return watched;
        }
        const AttrNumber attnum = get_attnum(relation, command->name);
        if (attnum > 0 && default_sources(relation, attnum).draws_ids) {
            auto *column = static_cast<WatchedColumn *>(palloc(sizeof(WatchedColumn)));
            column->relation = relation;
            column->attnum = attnum;
            watched = lappend(watched, column);
        }
    }
    return watched;
}

// The warning for a column whose default no longer draws ids, once the statement is done. The
// way back depends on the new default: snowflake_convert_column() takes a column that a sequence
// feeds and checks the keys the sequence stored meanwhile; it refuses any other column, whose
// keys came from the statements themselves.
void warn_if_replaced(const WatchedColumn &column) {
    if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(column.relation))) {
        return;
    }
    const DefaultSources sources = default_sources(column.relation, column.attnum);
    const char *name = get_attname(column.relation, column.attnum, true);
    if (sources.draws_ids || name == nullptr) {
        return;
    }
    const char *table = table_text(column.relation);
    const char *way_back =
        sources.reads_sequence
            ? psprintf(
                  "SELECT snowflake_convert_column(%s, %s), which first checks the keys the "
                  "sequence stored",
                  quote_literal_cstr(table), quote_literal_cstr(name))
            : psprintf("ALTER TABLE %s ALTER COLUMN %s SET DEFAULT snowflake_nextval()", table,
                       quote_identifier(name));
    ereport(WARNING,
            (errmsg("the default of column %s of table %s no longer calls snowflake_nextval()",
                    quote_identifier(name), table),
             errdetail("Rows inserted without a key now take their key from the new default. "
                       "Such keys may equal another server's ids, and readers that follow the "
                       "table by id can miss them."),
             errhint("To give the column ids again, run %s. doc/reference.md \"ORMs and "
                     "frameworks\" has a Django key that keeps its default.",
                     way_back)));
}

// The hook: the columns to watch, the statement, the warnings.
void watch_key_defaults(PlannedStmt *planned, const char *query, bool read_only_tree,
                        ProcessUtilityContext context, ParamListInfo parameters,
                        QueryEnvironment *environment, DestReceiver *destination,
                        QueryCompletion *completion) {
    Node *tree = planned->utilityStmt;
    List *watched = NIL;
    if (IsA(tree, AlterTableStmt) && IsTransactionState()) {
        watched = columns_to_watch(castNode(AlterTableStmt, tree));
    }
    if (previous_utility_hook != nullptr) {
        previous_utility_hook(planned, query, read_only_tree, context, parameters, environment,
                              destination, completion);
    } else {
        standard_ProcessUtility(planned, query, read_only_tree, context, parameters, environment,
                                destination, completion);
    }
    if (watched != NIL) {
        CommandCounterIncrement();
    }
    ListCell *cell;
    foreach (cell, watched) {
        warn_if_replaced(*static_cast<WatchedColumn *>(lfirst(cell)));
    }
}

}  // namespace

// Installed by _PG_init in every backend that loads the library.
void snowflake_install_default_watch() {
    previous_utility_hook = ProcessUtility_hook;
    ProcessUtility_hook = watch_key_defaults;
}
