// min(snowflake) and max(snowflake) (version 1.9) keep the type, so that max(id) of a snowflake
// key is written as a string in JSON like the key itself. They are bigint's min() and max() in
// all but the type: their transition functions run bigint's (int8smaller, int8larger). What
// bigint's have and they cannot is a sort operator, which lets the planner answer min() and max()
// from a btree on the column instead of reading every row; the type has no operators of its own
// (doc/design.md "The snowflake type" says why). So the planner hook gives each call of them to
// the planner as bigint's aggregate over the column relabelled as bigint, its result relabelled
// back: the same values, the same plans as bigint's, the type kept. The aggregates are recognised
// as the extension's own members named min and max over its type: a role's aggregate of the same
// name and argument elsewhere is left alone.

extern "C" {
#include "postgres.h"

#include "access/transam.h"
#include "catalog/dependency.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "nodes/parsenodes.h"
#include "utils/fmgroids.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
}

#include "pg/compat.hpp"
#include "pg/functions/id_aggregates.hpp"
#include "pg/library_objects.hpp"

namespace {

// The aggregates of the installation in this database, as met in statements, forgotten when
// pg_proc changes (the extension dropped, created, updated or moved).
struct IdAggregates {
    Oid min = InvalidOid;
    Oid max = InvalidOid;
    // The last aggregate found to be neither, so that a statement's calls of it are not each
    // looked up.
    Oid other = InvalidOid;
};

IdAggregates known_aggregates;

// Any change to pg_proc may have dropped, moved or made them.
void forget_id_aggregates(Datum, SnowflakeSyscacheId, uint32) {
    known_aggregates = IdAggregates();
}

// Whether a type is the snowflake type, whose input function is this library's.
bool is_id_type(Oid type) {
    if (type < FirstNormalObjectId) {
        return false;
    }
    Oid input = InvalidOid;
    Oid input_parameter = InvalidOid;
    getTypeInputInfo(type, &input, &input_parameter);
    return snowflake_is_library_function(input, "snowflake_in");
}

// Whether a call is of one of the two aggregates: the extension's aggregates of one argument of
// its type named min and max. An ORDER BY, DISTINCT or FILTER of the call is carried over as it
// is (its sort and equality operators are bigint's already).
bool is_id_aggregate(const Aggref *call) {
    const Oid aggregate = call->aggfnoid;
    if (aggregate == known_aggregates.min || aggregate == known_aggregates.max) {
        return list_length(call->args) == 1;
    }
    if (aggregate == known_aggregates.other || call->aggtype < FirstNormalObjectId ||
        list_length(call->aggargtypes) != 1 || linitial_oid(call->aggargtypes) != call->aggtype) {
        return false;
    }
    const Oid extension = get_extension_oid("snowflake", true);
    const char *name = get_func_name(aggregate);
    const bool is_min = name != nullptr && strcmp(name, "min") == 0;
    const bool is_max = name != nullptr && strcmp(name, "max") == 0;
    // The lookups may have processed an invalidation that reset known_aggregates.
    if (!OidIsValid(extension) || !(is_min || is_max) || !is_id_type(call->aggtype) ||
        getExtensionOfObject(ProcedureRelationId, aggregate) != extension) {
        known_aggregates.other = aggregate;
        return false;
    }
    (is_min ? known_aggregates.min : known_aggregates.max) = aggregate;
    return list_length(call->args) == 1;
}

// A call of min(snowflake) or max(snowflake), in the copy expression_tree_mutator made of it,
// made bigint's and wrapped in a relabelling to the type.
Node *as_bigint_aggregate(Aggref *call) {
    const Oid type = call->aggtype;
    call->aggfnoid = call->aggfnoid == known_aggregates.max ? F_MAX_INT8 : F_MIN_INT8;
    call->aggtype = INT8OID;
    call->aggtranstype = InvalidOid;
    call->aggargtypes = lappend_oid(NIL, INT8OID);
    auto *argument = static_cast<TargetEntry *>(linitial(call->args));
    argument->expr = reinterpret_cast<Expr *>(
        makeRelabelType(argument->expr, INT8OID, -1, InvalidOid, COERCE_IMPLICIT_CAST));
    return reinterpret_cast<Node *>(makeRelabelType(reinterpret_cast<Expr *>(call), type, -1,
                                                    InvalidOid, COERCE_IMPLICIT_CAST));
}

// Whether the statement calls one of them anywhere, so that a statement without one is not
// copied.
bool calls_id_aggregate(Node *node, void *context) {
    if (node == nullptr) {
        return false;
    }
    if (IsA(node, Aggref) && is_id_aggregate(reinterpret_cast<Aggref *>(node))) {
        return true;
    }
    if (IsA(node, Query)) {
        return query_tree_walker(reinterpret_cast<Query *>(node),
                                 SNOWFLAKE_WALKER_CALLBACK(calls_id_aggregate), context, 0);
    }
    return expression_tree_walker(node, SNOWFLAKE_WALKER_CALLBACK(calls_id_aggregate), context);
}

// Replaces each call in every query level: subqueries in FROM, CTEs and sublinks.
Node *replace_id_aggregates(Node *node, void *context) {
    if (node == nullptr) {
        return nullptr;
    }
    if (IsA(node, Query)) {
        return reinterpret_cast<Node *>(query_tree_mutator(
            reinterpret_cast<Query *>(node), SNOWFLAKE_MUTATOR_CALLBACK(replace_id_aggregates),
            context, QTW_DONT_COPY_QUERY));
    }
    Node *replaced =
        expression_tree_mutator(node, SNOWFLAKE_MUTATOR_CALLBACK(replace_id_aggregates), context);
    if (IsA(replaced, Aggref) && is_id_aggregate(reinterpret_cast<Aggref *>(replaced))) {
        return as_bigint_aggregate(reinterpret_cast<Aggref *>(replaced));
    }
    return replaced;
}

}  // namespace

void snowflake_plan_id_aggregates_as_bigint(Query *parse) {
    if (parse->commandType != CMD_UTILITY &&
        calls_id_aggregate(reinterpret_cast<Node *>(parse), nullptr)) {
        (void)query_tree_mutator(parse, SNOWFLAKE_MUTATOR_CALLBACK(replace_id_aggregates), nullptr,
                                 QTW_DONT_COPY_QUERY);
    }
}

void snowflake_watch_id_aggregates() {
    CacheRegisterSyscacheCallback(PROCOID, forget_id_aggregates, 0);
}
