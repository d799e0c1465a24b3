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
#include "catalog/pg_attribute.h"
#include "catalog/pg_depend.h"
#include "catalog/pg_inherits.h"
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

// A column whose default called snowflake_nextval() before the statement, and that function.
struct WatchedColumn {
    Oid relation;
    AttrNumber attnum;
    Oid generator;
};

// What a column's default calls or reads, as pg_depend records it: every function and sequence
// the expression uses, so a cast around a call or a call inside COALESCE counts too.
struct DefaultSources {
    Oid generator;        // this library's snowflake_nextval() where it calls it
    bool reads_sequence;  // it reads a sequence
};

DefaultSources default_sources(Oid relation, AttrNumber attnum) {
    DefaultSources sources = {InvalidOid, false};
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
            sources.generator = row->refobjid;
        } else if (row->refclassid == RelationRelationId &&
                   get_rel_relkind(row->refobjid) == RELKIND_SEQUENCE) {
            sources.reads_sequence = true;
        }
    }
    systable_endscan(scan);
    table_close(depend, AccessShareLock);
    return sources;
}

// Adds the column of that name to the list where its default draws ids now.
List *watch_column(List *watched, Oid relation, const char *name) {
    const AttrNumber attnum = get_attnum(relation, name);
    const Oid generator = attnum > 0 ? default_sources(relation, attnum).generator : InvalidOid;
    if (!OidIsValid(generator)) {
        return watched;
    }
    auto *column = static_cast<WatchedColumn *>(palloc(sizeof(WatchedColumn)));
    column->relation = relation;
    column->attnum = attnum;
    column->generator = generator;
    return lappend(watched, column);
}

// The columns whose default the statement sets or drops and that draw ids now: the named
// table's first, then those of the partitions and inheritance children it recurses into. The
// names are resolved without a lock, as the statement will resolve them: a rename meanwhile
// costs at most a warning.
List *columns_to_watch(const AlterTableStmt *statement) {
    List *watched = NIL;
    Oid relation = InvalidOid;
    List *tree = NIL;
    ListCell *cell;
    foreach (cell, statement->cmds) {
        const AlterTableCmd *command = lfirst_node(AlterTableCmd, cell);
        if (command->subtype != AT_ColumnDefault || command->name == nullptr) {
            continue;
        }
        if (!OidIsValid(relation)) {
            relation = RangeVarGetRelid(statement->relation, NoLock, true);
            if (!OidIsValid(relation)) {
                return NIL;
            }
            tree = statement->relation->inh ? find_all_inheritors(relation, NoLock, nullptr)
                                            : list_make1_oid(relation);
        }
        ListCell *member;
        foreach (member, tree) {
            watched = watch_column(watched, lfirst_oid(member), command->name);
        }
    }
    return watched;
}

// The column's state after the statement: gone (dropped by the statement, or with its table), or
// an identity, which no default feeds.
struct ColumnState {
    bool gone;
    bool identity;
};

ColumnState column_state(Oid relation, AttrNumber attnum) {
    HeapTuple tuple = SearchSysCache2(ATTNUM, ObjectIdGetDatum(relation), Int16GetDatum(attnum));
    if (!HeapTupleIsValid(tuple)) {
        return {true, false};
    }
    const auto *attribute = reinterpret_cast<Form_pg_attribute>(GETSTRUCT(tuple));
    const ColumnState state = {attribute->attisdropped, attribute->attidentity != '\0'};
    ReleaseSysCache(tuple);
    return state;
}

// The warning for the columns whose default no longer draws ids, once the statement is done: one
// for the first, which is the named table's where its own changed, with a count of the others
// (its partitions or children, which the hint's statement reaches too). The way back depends on
// the new default: snowflake_convert_column() takes a column that a sequence or an identity
// feeds and checks the keys stored meanwhile; it refuses any other column, whose keys came from
// the statements themselves. Both name the extension's functions with their schema.
void warn_of_replaced(List *watched) {
    const WatchedColumn *first = nullptr;
    int others = 0;
    ListCell *cell;
    foreach (cell, watched) {
        const auto *column = static_cast<const WatchedColumn *>(lfirst(cell));
        if (column_state(column->relation, column->attnum).gone ||
            OidIsValid(default_sources(column->relation, column->attnum).generator)) {
            continue;
        }
        if (first == nullptr) {
            first = column;
        } else {
            others++;
        }
    }
    if (first == nullptr) {
        return;
    }
    const char *name = get_attname(first->relation, first->attnum, false);
    const char *table = table_text(first->relation);
    const char *schema = quote_identifier(get_namespace_name(get_func_namespace(first->generator)));
    const bool fed = default_sources(first->relation, first->attnum).reads_sequence ||
                     column_state(first->relation, first->attnum).identity;
    const char *way_back =
        fed ? psprintf(
                  "SELECT %s.snowflake_convert_column(%s, %s), which first checks the keys "
                  "stored meanwhile",
                  schema, quote_literal_cstr(table), quote_literal_cstr(name))
            : psprintf("ALTER TABLE %s ALTER COLUMN %s SET DEFAULT %s.snowflake_nextval()", table,
                       quote_identifier(name), schema);
    ereport(WARNING,
            (errmsg("the default of column %s of table %s no longer calls snowflake_nextval()",
                    quote_identifier(name), table),
             others > 0 ? errdetail_plural("The defaults of %d more table under it changed too. "
                                           "Rows inserted without a key now take their key from "
                                           "the new default, which may equal another server's "
                                           "ids and escape readers that follow by id.",
                                           "The defaults of %d more tables under it changed too. "
                                           "Rows inserted without a key now take their key from "
                                           "the new default, which may equal another server's "
                                           "ids and escape readers that follow by id.",
                                           others, others)
                        : errdetail("Rows inserted without a key now take their key from the new "
                                    "default. Such keys may equal another server's ids, and "
                                    "readers that follow the table by id can miss them."),
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
        warn_of_replaced(watched);
    }
}

}  // namespace

// Installed by _PG_init in every backend that loads the library.
void snowflake_install_default_watch() {
    previous_utility_hook = ProcessUtility_hook;
    ProcessUtility_hook = watch_key_defaults;
}
