// min() and max() of the snowflake type (version 1.9) planned as bigint's (id_aggregates.cpp).
// Include only after postgres.h and nodes/parsenodes.h.
#pragma once

// Before the standard planner: every call of the extension's min(snowflake) or max(snowflake) in
// the statement becomes bigint's min() or max() of the column, its result relabelled as the
// snowflake type, so that the planner answers it from a btree on the column (bigint's aggregates
// name their sort operator; the type has no operators to name).
void snowflake_plan_id_aggregates_as_bigint(Query *parse);

// At start: forgets the aggregates found when pg_proc changes.
void snowflake_watch_id_aggregates();
