// The refusals of snowflake_convert_column() (convert.cpp): everything that would make the
// conversion fail halfway, issue an id that may exist, or run another role's code with the
// caller's rights, judged before anything changes (doc/reference.md "Converting a serial or
// identity column" lists them).

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
#include "pg/id_bounds.hpp"
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

// One table of refuse_unfit_tree, as its owner: refuses when a constraint rejects the id or no
// partition takes it; returns the partitions or children the id goes on to.
List *tables_taking_id(Oid table, const char *column, int64 id) {
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
    return next;
}

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

void refuse_keys_out_of_range(Oid relation, const char *column, const KeyFacts &key) {
    refuse_hidden_rows(relation, key.owner);
    (void)run_statement_as(
        {key.owner, kFunctionName, psprintf("reading the keys of %s", key.column_text), true},
        psprintf("SELECT pg_catalog.min(%1$s)::pg_catalog.int8, "
                 "pg_catalog.max(%1$s)::pg_catalog.int8 FROM %2$s",
                 quote_identifier(column), table_text(relation)));
    bool lowest_null = true;
    bool highest_null = true;
    const int64 lowest =
        DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &lowest_null));
    const int64 highest = DatumGetInt64(
        SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &highest_null));
    const int64 lowest_new_id = snowflake_min_id_at(GetCurrentTransactionStartTimestamp());
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

void refuse_unfit_tree(Oid table, const char *column, int64 id) {
    List *next = NIL;
    run_as_role({owner_of(table), kFunctionName,
                 psprintf("judging a new id in %s", table_text(table)), false},
                [&] { next = tables_taking_id(table, column, id); });
    ListCell *cell;
    foreach (cell, next) {
        refuse_unfit_tree(lfirst_oid(cell), column, id);
    }
}

void refuse_negative_values(const Root *roots, int root_count, const char *key_text) {
    for (int i = 0; i < root_count; i++) {
        const Root &root = roots[i];
        if (!is_small_integer(root.type) && root.type != INT8OID) {
            continue;
        }
        const Oid owner = owner_of(root.relation);
        refuse_hidden_rows(root.relation, owner);
        (void)run_statement_as(
            {owner, kFunctionName, psprintf("reading the values of %s", root.text), true},
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

}  // namespace snowflake_convert
