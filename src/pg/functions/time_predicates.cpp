// Time predicates on Snowflake keys: a planner hook that gives a comparison of
// snowflake_timestamp(column) with a query constant the equivalent condition on the column itself,
//
//     snowflake_timestamp(id) >= t   gains   id >= snowflake_min_id(t)
//     snowflake_timestamp(id) >  t   gains   id >  snowflake_max_id(t)
//     snowflake_timestamp(id) <  t   gains   id <  snowflake_min_id(t)   (t a constant)
//                                         or   id <= snowflake_max_id(t)   (t known at run time)
//     snowflake_timestamp(id) <= t   gains   id <= snowflake_max_id(t)
//     snowflake_timestamp(id) =  t   gains   both bounds
//
// so that a btree on the column, and partition pruning on it, can serve the query. Each added
// condition is implied by the one it comes from, which stays, so results are the same with and
// without it. Only top-level AND conditions of WHERE and JOIN ... ON clauses are considered, in
// every subquery, CTE and sublink of the statement. In a database without the extension the
// statement is not walked at all. The functions are recognised by OID: a candidate call's
// pg_proc row is checked once (its C symbol and library), and the range helpers are looked up by
// name once, then again only after pg_proc changed (a function dropped or replaced).
//
// The added condition calls the helpers, so it is added only for a role that may run them, and a
// plan that has one is marked as depending on the role: a cached plan (PREPARE, PL/pgSQL) run by
// another role is planned anew for it, never failed for want of a privilege the query without
// the condition does not need. A change of snowflake.time_predicates invalidates the session's
// cached plans (snowflake_assign_time_predicates), so that none keeps a condition added, or left
// out, under the other value.
//
// The error-boundary rules are stated at the top of module.cpp.

extern "C" {
#include "postgres.h"

#include "access/stratnum.h"
#include "catalog/pg_am.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "utils/acl.h"
#include "commands/defrem.h"
#include "commands/extension.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "optimizer/planner.h"
#include "parser/parse_func.h"
#include "rewrite/rewriteManip.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/plancache.h"
#include "utils/syscache.h"
}

#include "core/codec.hpp"
#include "core/layout.hpp"
#include "pg/compat.hpp"
#include "pg/library_objects.hpp"
#include "pg/settings.hpp"
#include "pg/functions/id_aggregates.hpp"
#include "pg/functions/time_predicates.hpp"

namespace {

planner_hook_type previous_planner_hook = nullptr;

// copyObject() and list_make*() are macros built on typeof and compound literals, which C++ has
// not; these are their C++ spellings.
template <typename T>
T *copy_node(const T *node) {
    return static_cast<T *>(copyObjectImpl(node));
}

List *list_of(void *first, void *second = nullptr) {
    List *list = lappend(NIL, first);
    return second != nullptr ? lappend(list, second) : list;
}

// The extension's functions as found in one installation; found anew when the OID of
// snowflake_timestamp changes (the extension was dropped and created again).
struct ExtensionFunctions {
    Oid timestamp = InvalidOid;
    Oid min_id = InvalidOid;
    Oid max_id = InvalidOid;
    // The snowflake type (version 1.6), or InvalidOid before 1.6.
    Oid id_type = InvalidOid;
};

ExtensionFunctions known_functions;

// Whether the extension is installed in this database, looked up once and again after pg_proc
// changed (CREATE and DROP EXTENSION change it), so that where it is not installed the hook does
// not walk the query at all.
enum class ExtensionPresence : uint8_t { kUnknown, kAbsent, kPresent };

ExtensionPresence extension_presence = ExtensionPresence::kUnknown;

// Any change to pg_proc may have dropped or replaced one of the functions: look them up again.
void forget_extension_functions(Datum, SnowflakeSyscacheId, uint32) {
    known_functions = ExtensionFunctions();
    extension_presence = ExtensionPresence::kUnknown;
}

// A catalog lookup the first time, a variable after.
bool extension_installed() {
    if (extension_presence == ExtensionPresence::kUnknown) {
        extension_presence = OidIsValid(get_extension_oid("snowflake", true))
                                 ? ExtensionPresence::kPresent
                                 : ExtensionPresence::kAbsent;
    }
    return extension_presence == ExtensionPresence::kPresent;
}

// The range helper of the same installation (same schema) as snowflake_timestamp.
Oid helper_beside(Oid timestamp_function, const char *name) {
    const Oid argument_type = TIMESTAMPTZOID;
    char *schema = get_namespace_name(get_func_namespace(timestamp_function));
    const Oid helper = LookupFuncName(list_of(makeString(schema), makeString(pstrdup(name))), 1,
                                      &argument_type, true);
    return OidIsValid(helper) && snowflake_is_library_function(helper, name) ? helper : InvalidOid;
}

// Recognises a call of snowflake_timestamp, however it was named in the query.
bool is_snowflake_timestamp(Oid function) {
    if (function == known_functions.timestamp) {
        return true;
    }
    if (!snowflake_is_library_function(function, "snowflake_timestamp")) {
        return false;
    }
    ExtensionFunctions found;
    found.timestamp = function;
    found.min_id = helper_beside(function, "snowflake_min_id");
    found.max_id = helper_beside(function, "snowflake_max_id");
    if (!OidIsValid(found.min_id) || !OidIsValid(found.max_id)) {
        return false;
    }
    found.id_type = snowflake_id_type_beside(function);
    known_functions = found;
    return true;
}

// The column of snowflake_timestamp(column), or null when the expression is anything else.
Var *snowflake_timestamp_column(Node *node) {
    if (!IsA(node, FuncExpr)) {
        return nullptr;
    }
    auto *call = reinterpret_cast<FuncExpr *>(node);
    if (call->funcresulttype != TIMESTAMPTZOID || list_length(call->args) != 1) {
        return nullptr;
    }
    // A snowflake column reaches the function through its implicit cast to bigint, which this
    // strips.
    Node *argument = strip_implicit_coercions(static_cast<Node *>(linitial(call->args)));
    if (!IsA(argument, Var)) {
        return nullptr;
    }
    auto *column = reinterpret_cast<Var *>(argument);
    if (column->varlevelsup != 0 || !is_snowflake_timestamp(call->funcid)) {
        return nullptr;
    }
    const bool is_id_type =
        OidIsValid(known_functions.id_type) && column->vartype == known_functions.id_type;
    return column->vartype == INT8OID || is_id_type ? column : nullptr;
}

// Constant for one execution of the query: no column of its own level, nothing volatile, no
// subquery. Parameters, outer references and stable functions such as now() qualify.
bool is_query_constant(Node *node) {
    return !contain_var_clause(node) && !contain_volatile_functions(node) &&
           !checkExprHasSubLink(node);
}

Oid default_btree_family(Oid type) {
    return get_opclass_family(GetDefaultOpClass(type, BTREE_AM_OID));
}

// The btree strategy of a timestamptz comparison, or 0 for any other operator.
int timestamptz_strategy(Oid operator_oid) {
    static Oid timestamptz_family = InvalidOid;
    if (!OidIsValid(timestamptz_family)) {
        timestamptz_family = default_btree_family(TIMESTAMPTZOID);
    }
    return get_op_opfamily_strategy(operator_oid, timestamptz_family);
}

// column <strategy> helper(bound), as a bigint comparison: a snowflake column is compared through
// its binary cast to bigint, as PostgreSQL compares it everywhere, which bigint's indexes and
// partition bounds on the column serve.
Expr *column_condition(int strategy, Var *column, Oid helper, Node *bound) {
    static Oid int8_family = InvalidOid;
    if (!OidIsValid(int8_family)) {
        int8_family = default_btree_family(INT8OID);
    }
    const Oid operator_oid = get_opfamily_member(int8_family, INT8OID, INT8OID, strategy);
    Expr *key = reinterpret_cast<Expr *>(copy_node(column));
    if (column->vartype != INT8OID) {
        key = reinterpret_cast<Expr *>(
            makeRelabelType(key, INT8OID, -1, InvalidOid, COERCE_IMPLICIT_CAST));
    }
    FuncExpr *bound_id = makeFuncExpr(helper, INT8OID, list_of(copy_node(bound)), InvalidOid,
                                      InvalidOid, COERCE_EXPLICIT_CALL);
    auto *condition = reinterpret_cast<OpExpr *>(make_opclause(operator_oid, BOOLOID, false, key,
                                                               reinterpret_cast<Expr *>(bound_id),
                                                               InvalidOid, InvalidOid));
    set_opfuncid(condition);
    return reinterpret_cast<Expr *>(condition);
}

// snowflake_min_id() of an instant past July 2080 clamps to the largest id, which that id's own
// timestamp is before, so "id < snowflake_min_id(t)" is exact only up to then. A constant is
// checked now; a bound known only at run time gets "id <= snowflake_max_id(t)", which holds too
// and costs at most the rows of one more millisecond.
List *conditions_for_less_than(Var *column, Node *bound, const ExtensionFunctions &helpers) {
    if (!IsA(bound, Const)) {
        return list_of(column_condition(BTLessEqualStrategyNumber, column, helpers.max_id, bound));
    }
    auto *constant = reinterpret_cast<Const *>(bound);
    if (!constant->constisnull && snowflake::unix_ms_ceil_from_pg_us(DatumGetTimestampTz(
                                      constant->constvalue)) > snowflake::kMaxUnixMs) {
        return NIL;
    }
    return list_of(column_condition(BTLessStrategyNumber, column, helpers.min_id, bound));
}

// What rewriting a statement found out about it.
struct RewriteContext {
    // A candidate comparison was found, so whether it was rewritten depends on the current role's
    // privileges on the helpers.
    bool depends_on_role = false;
};

// The conditions on the column that one comparison implies, or NIL.
List *column_conditions_for(Node *clause, RewriteContext *context) {
    if (!IsA(clause, OpExpr)) {
        return NIL;
    }
    auto *comparison = reinterpret_cast<OpExpr *>(clause);
    if (list_length(comparison->args) != 2) {
        return NIL;
    }
    Node *left = static_cast<Node *>(linitial(comparison->args));
    Node *right = static_cast<Node *>(lsecond(comparison->args));
    if (exprType(left) != TIMESTAMPTZOID || exprType(right) != TIMESTAMPTZOID) {
        return NIL;
    }
    int strategy = timestamptz_strategy(comparison->opno);
    if (strategy == 0) {
        return NIL;
    }
    Var *column = snowflake_timestamp_column(left);
    Node *bound = right;
    if (column == nullptr) {
        column = snowflake_timestamp_column(right);
        bound = left;
        // t < snowflake_timestamp(id) is snowflake_timestamp(id) > t.
        strategy = BTMaxStrategyNumber + 1 - strategy;
    }
    // A copy, taken while it is the function just recognised: the catalog lookups below may
    // process invalidations that reset known_functions.
    const ExtensionFunctions helpers = known_functions;
    if (column == nullptr || !is_query_constant(bound)) {
        return NIL;
    }
    context->depends_on_role = true;
    if (!snowflake_may_execute(helpers.min_id) || !snowflake_may_execute(helpers.max_id)) {
        return NIL;
    }
    switch (strategy) {
        case BTLessStrategyNumber:
            return conditions_for_less_than(column, bound, helpers);
        case BTLessEqualStrategyNumber:
            return list_of(
                column_condition(BTLessEqualStrategyNumber, column, helpers.max_id, bound));
        case BTEqualStrategyNumber:
            return list_of(
                column_condition(BTGreaterEqualStrategyNumber, column, helpers.min_id, bound),
                column_condition(BTLessEqualStrategyNumber, column, helpers.max_id, bound));
        case BTGreaterEqualStrategyNumber:
            return list_of(
                column_condition(BTGreaterEqualStrategyNumber, column, helpers.min_id, bound));
        case BTGreaterStrategyNumber:
            return list_of(
                column_condition(BTGreaterStrategyNumber, column, helpers.max_id, bound));
        default:
            return NIL;
    }
}

// A WHERE or ON clause with the implied column conditions added to its top-level AND.
Node *with_column_conditions(Node *quals, RewriteContext *context) {
    if (quals == nullptr) {
        return nullptr;
    }
    List *conjuncts = make_ands_implicit(reinterpret_cast<Expr *>(quals));
    List *added = NIL;
    ListCell *cell;
    foreach (cell, conjuncts) {
        added =
            list_concat(added, column_conditions_for(static_cast<Node *>(lfirst(cell)), context));
    }
    if (added == NIL) {
        return quals;
    }
    return reinterpret_cast<Node *>(make_ands_explicit(list_concat(conjuncts, added)));
}

// Every WHERE and JOIN ... ON clause of one query level.
void add_to_join_tree(Node *node, RewriteContext *context) {
    if (node == nullptr) {
        return;
    }
    if (IsA(node, FromExpr)) {
        auto *from = reinterpret_cast<FromExpr *>(node);
        from->quals = with_column_conditions(from->quals, context);
        ListCell *cell;
        foreach (cell, from->fromlist) {
            add_to_join_tree(static_cast<Node *>(lfirst(cell)), context);
        }
    } else if (IsA(node, JoinExpr)) {
        auto *join = reinterpret_cast<JoinExpr *>(node);
        join->quals = with_column_conditions(join->quals, context);
        add_to_join_tree(join->larg, context);
        add_to_join_tree(join->rarg, context);
    }
}

// Visits every query level of a statement: subqueries in FROM, CTEs and sublinks.
bool add_to_every_query(Node *node, void *context) {
    if (node == nullptr) {
        return false;
    }
    if (IsA(node, Query)) {
        auto *query = reinterpret_cast<Query *>(node);
        add_to_join_tree(reinterpret_cast<Node *>(query->jointree),
                         static_cast<RewriteContext *>(context));
        return query_tree_walker(query, SNOWFLAKE_WALKER_CALLBACK(add_to_every_query), context, 0);
    }
    return expression_tree_walker(node, SNOWFLAKE_WALKER_CALLBACK(add_to_every_query), context);
}

// The conditions are added, and the type's min() and max() given as bigint's (id_aggregates.hpp),
// before the standard planner runs, so that index paths and partition pruning see them like any
// other.
PlannedStmt *plan_snowflake_statement(SNOWFLAKE_PLANNER_PARAMETERS) {
    RewriteContext context;
    snowflake_plan_id_aggregates_as_bigint(parse);
    if (snowflake_time_predicates_setting && parse->commandType != CMD_UTILITY &&
        extension_installed()) {
        add_to_every_query(reinterpret_cast<Node *>(parse), &context);
    }
    PlannedStmt *plan = previous_planner_hook != nullptr
                            ? previous_planner_hook(SNOWFLAKE_PLANNER_ARGUMENTS)
                            : standard_planner(SNOWFLAKE_PLANNER_ARGUMENTS);
    if (context.depends_on_role) {
        plan->dependsOnRole = true;
    }
    return plan;
}

}  // namespace

void snowflake_install_planner_hook() {
    previous_planner_hook = planner_hook;
    planner_hook = plan_snowflake_statement;
    CacheRegisterSyscacheCallback(PROCOID, forget_extension_functions, 0);
    snowflake_watch_id_aggregates();
}

void snowflake_assign_time_predicates(bool enabled, void *) {
    if (enabled != snowflake_time_predicates_setting) {
        ResetPlanCache();
    }
}
