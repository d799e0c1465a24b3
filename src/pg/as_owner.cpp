// The owner's context shared by the conversion and the partition maintenance (as_owner.hpp).

extern "C" {
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_class.h"
#include "miscadmin.h"
#include "utils/guc.h"
#include "utils/syscache.h"
}

#include "pg/as_owner.hpp"

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

// Entered before each step that may run code of the table's owner.
OwnerContext begin_as_owner(Oid owner) {
    OwnerContext context;
    GetUserIdAndSecContext(&context.saved_user, &context.saved_security_context);
    SetUserIdAndSecContext(owner, context.saved_security_context | SECURITY_RESTRICTED_OPERATION);
    context.guc_nest_level = NewGUCNestLevel();
    (void)set_config_option("search_path", kPinnedSearchPath, PGC_USERSET, PGC_S_SESSION,
                            GUC_ACTION_SAVE, true, 0, false);
    return context;
}

// Left after the step: every setting changed in the step is undone, a plain SET or set_config()
// of the owner's code included (AtEOXact_GUC's isCommit false, as PostgreSQL's maintenance
// commands end theirs), and the caller is back.
void end_as_owner(const OwnerContext &context) {
    AtEOXact_GUC(false, context.guc_nest_level);
    SetUserIdAndSecContext(context.saved_user, context.saved_security_context);
}
