// One refusal, worded once, for every function that must see the tables as its locks leave them.

extern "C" {
#include "postgres.h"

#include "access/xact.h"
}

#include "pg/isolation.hpp"

// A READ COMMITTED statement takes a new snapshot once the lock is held; a transaction snapshot
// does not.
void snowflake_refuse_snapshot_isolation(const char *function_name) {
    if (!IsolationUsesXactSnapshot()) {
        return;
    }
    ereport(
        ERROR,
        (errcode(ERRCODE_INVALID_TRANSACTION_STATE),
         errmsg("%s cannot run in a REPEATABLE READ or SERIALIZABLE transaction", function_name),
         errdetail("It must read the tables as they are once its locks are held, and this "
                   "transaction's snapshot may be older. Nothing was changed."),
         errhint("Run it in a READ COMMITTED transaction (the default): BEGIN ISOLATION "
                 "LEVEL READ COMMITTED.")));
}
