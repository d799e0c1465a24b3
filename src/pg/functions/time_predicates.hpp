// The planner hook for snowflake_timestamp(column) predicates (time_predicates.cpp), which also
// plans the type's min() and max() as bigint's (id_aggregates.hpp).
#pragma once

// Installs the hook, chained after any hook installed before.
void snowflake_install_planner_hook();

// The assign hook of snowflake.time_predicates. A cached plan (PREPARE, PL/pgSQL, SPI) keeps the
// conditions the hook added, or did not add, when it was made; a change of the setting marks every
// cached plan of the session invalid, as DISCARD PLANS does, so that each is planned anew under
// the new value at its next use. ResetPlanCache() only marks plans: it reads no catalog and raises
// no error, as an assign hook must not (it runs in SET and RESET, at the end of a function with
// a SET clause, when a transaction is rolled back and when a parallel worker restores settings).
void snowflake_assign_time_predicates(bool enabled, void *extra);
