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
#include "catalog/pg_constraint.h"
#include "catalog/pg_depend.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_proc.h"
#include "lib/stringinfo.h"
#include "nodes/parsenodes.h"
#include "tcop/utility.h"
#include "utils/array.h"
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

// What a column's default calls or reads.
struct DefaultSources {
    Oid generator;        // this library's snowflake_nextval() where it calls it
    bool reads_sequence;  // it reads a sequence
};

// Read from pg_depend, which records every function and sequence the expression uses, so that a
// cast around the call or a call inside COALESCE counts too.
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
    ListCell *cell;
    foreach (cell, watched) {
        const auto *known = static_cast<const WatchedColumn *>(lfirst(cell));
        if (known->relation == relation && known->attnum == attnum) {
            return watched;
        }
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

// The column's state after the statement.
struct ColumnState {
    bool gone;
    bool identity;
    bool inherited;  // from a parent, so that the conversion refuses it here
};

// A column the statement dropped, or whose table went, is no concern of the warning, and an
// identity column's way back is the conversion.
ColumnState column_state(Oid relation, AttrNumber attnum) {
    HeapTuple tuple = SearchSysCache2(ATTNUM, ObjectIdGetDatum(relation), Int16GetDatum(attnum));
    if (!HeapTupleIsValid(tuple)) {
        return {true, false, false};
    }
    const auto *attribute = reinterpret_cast<Form_pg_attribute>(GETSTRUCT(tuple));
    const ColumnState state = {attribute->attisdropped, attribute->attidentity != '\0',
                               attribute->attinhcount > 0};
    ReleaseSysCache(tuple);
    return state;
}

// Whether the column is part of a primary key or unique constraint, as the conversion requires.
bool is_key_column(Oid relation, AttrNumber attnum) {
    Relation constraints = table_open(ConstraintRelationId, AccessShareLock);
    ScanKeyData key;
    ScanKeyInit(&key, Anum_pg_constraint_conrelid, BTEqualStrategyNumber, F_OIDEQ,
                ObjectIdGetDatum(relation));
    SysScanDesc scan =
        systable_beginscan(constraints, ConstraintRelidTypidNameIndexId, true, nullptr, 1, &key);
    bool found = false;
    HeapTuple tuple;
    while (!found && HeapTupleIsValid(tuple = systable_getnext(scan))) {
        const auto *row = reinterpret_cast<Form_pg_constraint>(GETSTRUCT(tuple));
        bool is_null = true;
        const Datum columns =
            heap_getattr(tuple, Anum_pg_constraint_conkey, RelationGetDescr(constraints), &is_null);
        if ((row->contype != CONSTRAINT_PRIMARY && row->contype != CONSTRAINT_UNIQUE) || is_null) {
            continue;
        }
        ArrayType *array = DatumGetArrayTypeP(columns);
        const auto *attnums = reinterpret_cast<const int16 *>(ARR_DATA_PTR(array));
        for (int i = 0; i < ARR_DIMS(array)[0]; i++) {
            found = found || attnums[i] == attnum;
        }
    }
    systable_endscan(scan);
    table_close(constraints, AccessShareLock);
    return found;
}

// The statement as the hint needs it: the table it names, and whether it recursed (no ONLY).
struct Statement {
    Oid named;
    bool recursed;
};

// The step that gives the column ids again, with every name qualified and the conversion's
// arguments typed, so that neither the session's search path nor an overload decides what runs.
// The conversion takes a key that a sequence or an identity feeds, and first checks the keys
// stored meanwhile; any other column gets its default back. One table is set ONLY, so that its
// children keep theirs; the named table of a recursing statement is set as the statement did.
char *way_back(const Statement &statement, List *replaced, const char *column) {
    const auto *first = static_cast<const WatchedColumn *>(linitial(replaced));
    const char *schema = quote_identifier(get_namespace_name(get_func_namespace(first->generator)));
    const bool whole_tree = list_length(replaced) > 1;
    const Oid target = whole_tree ? statement.named : first->relation;
    const AttrNumber attnum = get_attnum(target, column);
    const bool fed = attnum > 0 && (default_sources(target, attnum).reads_sequence ||
                                    column_state(target, attnum).identity);
    const char *table = qualified_table_text(target);
    if (fed && is_key_column(target, attnum) && !get_rel_relispartition(target) &&
        !column_state(target, attnum).inherited) {
        return psprintf(
            "SELECT %s.snowflake_convert_column(%s::pg_catalog.regclass, "
            "%s::pg_catalog.name), which first checks the keys stored meanwhile",
            schema, quote_literal_cstr(table), quote_literal_cstr(column));
    }
    return psprintf("ALTER TABLE %s%s ALTER COLUMN %s SET DEFAULT %s.snowflake_nextval()",
                    whole_tree ? "" : "ONLY ", table, quote_identifier(column), schema);
}

// One warning for the tables whose column of that name no longer draws ids, the named table's
// first. Where they are several and the named table is not among them, or the statement did not
// recurse, no one statement restores them all: the hint says to set each.
void warn_of_column(const Statement &statement, List *replaced, const char *column) {
    const auto *first = static_cast<const WatchedColumn *>(linitial(replaced));
    const int count = list_length(replaced);
    const bool one_statement =
        count == 1 || (statement.recursed && first->relation == statement.named);
    StringInfoData tables;
    initStringInfo(&tables);
    ListCell *cell;
    foreach (cell, replaced) {
        const int index = foreach_current_index(cell);
        if (index < 5) {
            appendStringInfo(
                &tables, "%s%s", index > 0 ? ", " : "",
                table_text(static_cast<const WatchedColumn *>(lfirst(cell))->relation));
        }
    }
    if (count > 5) {
        appendStringInfo(&tables, " and %d more", count - 5);
    }
    const char *step = one_statement
                           ? way_back(statement, replaced, column)
                           : psprintf("%s, for each of them",
                                      way_back(statement, list_make1(linitial(replaced)), column));
    ereport(WARNING,
            (count == 1 ? errmsg("the default of column %s of table %s no longer calls "
                                 "snowflake_nextval()",
                                 quote_identifier(column), tables.data)
                        : errmsg("the default of column %s no longer calls snowflake_nextval() in "
                                 "%d tables: %s",
                                 quote_identifier(column), count, tables.data),
             errdetail("Rows inserted without a key now take their key from the new default. "
                       "Such keys may equal another server's ids, and readers that follow the "
                       "table by id can miss them."),
             errhint("To give the column ids again, run %s. doc/reference.md \"ORMs and "
                     "frameworks\" has a Django key that keeps its default.",
                     step)));
}

// The warnings once the statement is done: one per column name, for the tables whose column
// no longer draws ids (a column the statement dropped is no concern).
void warn_of_replaced(const Statement &statement, List *watched) {
    List *replaced = NIL;
    ListCell *cell;
    foreach (cell, watched) {
        auto *column = static_cast<WatchedColumn *>(lfirst(cell));
        if (!column_state(column->relation, column->attnum).gone &&
            !OidIsValid(default_sources(column->relation, column->attnum).generator)) {
            replaced = lappend(replaced, column);
        }
    }
    while (replaced != NIL) {
        const auto *first = static_cast<const WatchedColumn *>(linitial(replaced));
        const char *column = get_attname(first->relation, first->attnum, false);
        List *same = NIL;
        List *rest = NIL;
        foreach (cell, replaced) {
            auto *other = static_cast<WatchedColumn *>(lfirst(cell));
            const bool same_name =
                strcmp(get_attname(other->relation, other->attnum, false), column) == 0;
            if (same_name) {
                same = lappend(same, other);
            } else {
                rest = lappend(rest, other);
            }
        }
        warn_of_column(statement, same, column);
        replaced = rest;
    }
}

// The columns are read before the statement, since after it their old defaults are gone.
void watch_key_defaults(PlannedStmt *planned, const char *query, bool read_only_tree,
                        ProcessUtilityContext context, ParamListInfo parameters,
                        QueryEnvironment *environment, DestReceiver *destination,
                        QueryCompletion *completion) {
    Node *tree = planned->utilityStmt;
    List *watched = NIL;
    Statement statement = {InvalidOid, false};
    if (IsA(tree, AlterTableStmt) && IsTransactionState()) {
        const auto *alter = castNode(AlterTableStmt, tree);
        watched = columns_to_watch(alter);
        if (watched != NIL) {
            statement.named = RangeVarGetRelid(alter->relation, NoLock, true);
            statement.recursed = alter->relation->inh;
        }
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
        warn_of_replaced(statement, watched);
    }
}

}  // namespace

// Installed by _PG_init in every backend that loads the library.
void snowflake_install_default_watch() {
    previous_utility_hook = ProcessUtility_hook;
    ProcessUtility_hook = watch_key_defaults;
}
