// The switch to another role for a step (as_owner.hpp): the only code of the glue that calls
// SetUserIdAndSecContext.

extern "C" {
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_class.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/syscache.h"
}

#include "pg/as_owner.hpp"
#include "pg/compat.hpp"

namespace {

// Names the function, the step and the role it runs as, for an error raised in the step.
void step_error_context(void *text) {
    errcontext("%s", static_cast<const char *>(text));
}

}  // namespace

// A relation's owner from the syscache; a dropped relation is an internal error.
Oid owner_of(Oid relation) {
    HeapTuple tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relation));
    if (!HeapTupleIsValid(tuple)) {
        elog(ERROR, "snowflake: cache lookup failed for relation %u", relation);
    }
    const Oid owner = reinterpret_cast<Form_pg_class>(GETSTRUCT(tuple))->relowner;
    ReleaseSysCache(tuple);
    return owner;
}

// Nothing of another role's schema resolves by name while the call runs.
int pin_search_path() {
    const int guc_nest_level = NewGUCNestLevel();
    snowflake_restrict_search_path();
    return guc_nest_level;
}

// AtEOXact_GUC's isCommit false, as PostgreSQL's maintenance commands end theirs: a plain SET or
// set_config() made meanwhile ends here too.
void unpin_search_path(int guc_nest_level) {
    AtEOXact_GUC(false, guc_nest_level);
}

// Entered before each step that may run code of another role.
void enter_step(const RoleStep &step, EnteredStep *entered) {
    entered->context.previous = error_context_stack;
    entered->context.callback = step_error_context;
    entered->context.arg = psprintf("%s: %s, run as %s", step.function_name, step.what,
                                    quote_identifier(GetUserNameFromId(step.role, false)));
    error_context_stack = &entered->context;
    GetUserIdAndSecContext(&entered->saved_user, &entered->saved_security_context);
    SetUserIdAndSecContext(step.role,
                           entered->saved_security_context | SECURITY_RESTRICTED_OPERATION);
    entered->guc_nest_level = pin_search_path();
    if (step.see_every_row) {
        (void)set_config_option("row_security", "off", PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE,
                                true, 0, false);
    }
}

// Left after the step, in the reverse order of entering it.
void leave_step(EnteredStep *entered) {
    unpin_search_path(entered->guc_nest_level);
    SetUserIdAndSecContext(entered->saved_user, entered->saved_security_context);
    error_context_stack = entered->context.previous;
}

// Not read-only, so that SPI takes a new snapshot for the statement: the calling statement's was
// taken before the caller's locks were waited for, and would miss a key or a partition committed
// meanwhile (the conversion and maintenance refuse REPEATABLE READ for the same reason).
uint64 run_statement_as(const RoleStep &step, const char *statement, int argument_count,
                        Oid *argument_types, Datum *arguments, const char *nulls) {
    uint64 rows = 0;
    run_as_role(step, [&] {
        if (SPI_execute_with_args(statement, argument_count, argument_types, arguments, nulls,
                                  false, 0) < 0) {
            elog(ERROR, "snowflake: could not run: %s", statement);
        }
        rows = SPI_processed;
    });
    return rows;
}
