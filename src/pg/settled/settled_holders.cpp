// Who holds the settled bound back: one row per claim, so that an operator finds the long
// transaction that holds every reader back. Its detail is shown as pg_stat_activity shows a
// session's: in full to a superuser, to pg_read_all_stats and to the session's own role.

extern "C" {
#include "postgres.h"

#include "catalog/pg_authid.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "access/transam.h"
#include "access/xlog.h"
#include "storage/proc.h"
#include "utils/acl.h"
#include "utils/tuplestore.h"

PG_FUNCTION_INFO_V1(snowflake_settled_claims);
}

#include "pg/compat.hpp"
#include "pg/settled/settled_parts.hpp"
#include "pg/shared_state.hpp"

namespace {

constexpr int kColumns = 4;

// Whether the caller may see the detail of a role's claims, as pg_stat_activity decides.
bool may_see(Oid role) {
    return has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS) ||
           (OidIsValid(role) && has_privs_of_role(GetUserId(), role));
}

// One row: the backend's pid and role, or a prepared transaction's xid, and the lowest id.
void add_row(ReturnSetInfo *result, int pid, Oid role, TransactionId xid, uint64_t lowest,
             bool visible) {
    Datum values[kColumns] = {Int32GetDatum(pid), ObjectIdGetDatum(role),
                              TransactionIdGetDatum(xid),
                              Int64GetDatum(static_cast<int64>(lowest))};
    bool nulls[kColumns] = {pid == 0, !OidIsValid(role), !TransactionIdIsValid(xid), !visible};
    tuplestore_putvalues(result->setResult, result->setDesc, values, nulls);
}

}  // namespace

// The claims as they are now: each backend's, with its pid and role, and each prepared
// transaction's, with its xid.
Datum snowflake_settled_claims(PG_FUNCTION_ARGS) {
    snowflake_require_claims_memory();
    // After a start, a prepared transaction's claim is in a file until something reads it: this
    // list reads it too, so that it shows the holder before any bound is read. A standby's files
    // are its replay's.
    if (!RecoveryInProgress()) {
        snowflake_load_prepared_claims();
    }
    // A prepared transaction that has ended holds nothing, though its entry waits for a bound.
    snowflake_release_ended_prepared_claims();
    InitMaterializedSRF(fcinfo, 0);
    auto *result = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);
    for (uint32_t i = 0; i < snowflake_claims->slot_count; i++) {
        const uint64_t lowest = snowflake::claim_of(snowflake_claims->slots[i]);
        if (lowest == snowflake::kClaimsNothing) {
            continue;
        }
        const PGPROC *proc = GetPGProcByNumber(i);
        const Oid role = proc->roleId;
        add_row(result, proc->pid, role, InvalidTransactionId, lowest, may_see(role));
    }
    PreparedClaim *entries = snowflake_prepared_claims(snowflake_claims);
    for (uint32_t i = 0; i < snowflake_claims->prepared_count; i++) {
        const uint64_t lowest = snowflake::claim_of(entries[i].claim);
        const TransactionId xid = entries[i].xid.load();
        if (lowest == snowflake::kClaimsNothing || !TransactionIdIsNormal(xid)) {
            continue;
        }
        add_row(result, 0, InvalidOid, xid, lowest, may_see(InvalidOid));
    }
    return static_cast<Datum>(0);
}
