// The refusals of snowflake_convert_column() that judge values (refusals.cpp has those that judge
// the key's paths): stored keys hidden from the read, negative or out of the layout, an identity
// sequence shared with another column, and a new id that a constraint, a domain or the
// partitions would reject. Each runs as the table's owner where it reads or judges.

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
