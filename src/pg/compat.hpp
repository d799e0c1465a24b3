// What differs between the PostgreSQL versions the glue builds against (15 to 18), in one place.
// Include only after postgres.h; every #if on PG_VERSION_NUM in the glue belongs here.
#pragma once

extern "C" {
#include "access/xlogdefs.h"
#include "catalog/pg_proc.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "replication/syncrep.h"
#include "replication/walsender_private.h"
#include "storage/proc.h"
#include "utils/acl.h"
}

// PostgreSQL 13 and 14 have no custom WAL resource managers, without which a promoted standby
// could reissue ids its primary handed out (README "Supported versions").
#if PG_VERSION_NUM < 150000
#error \
    "snowflake needs PostgreSQL 15 or later: before 15 no custom WAL resource manager can carry its durable mark to standbys"
#endif

// The module's magic block; from 18 on it also names the library and its version, which
// pg_get_loaded_modules() shows. SNOWFLAKE_VERSION comes from the Makefile (the control file).
#if PG_VERSION_NUM >= 180000
#define SNOWFLAKE_MODULE_MAGIC \
    PG_MODULE_MAGIC_EXT(.name = "snowflake", .version = SNOWFLAKE_VERSION)
#else
#define SNOWFLAKE_MODULE_MAGIC PG_MODULE_MAGIC
#endif

// The tree walkers take a callback of a C type that PostgreSQL 16 changed.
#if PG_VERSION_NUM >= 160000
#define SNOWFLAKE_WALKER_CALLBACK(function) (function)
#else
// Through void (*)(void), the one function type a cast may pass through without a warning.
#define SNOWFLAKE_WALKER_CALLBACK(function) \
    reinterpret_cast<bool (*)()>(reinterpret_cast<void (*)()>(function))
#endif

// This backend's PGPROC index, or -1 in a process without one; PostgreSQL 17 renamed it.
inline int snowflake_own_proc_number() {
#if PG_VERSION_NUM >= 170000
    return MyProcNumber;
#else
    return MyProc != nullptr ? MyProc->pgprocno : -1;
#endif
}

// Whether the current role may execute a function; PostgreSQL 16 generalised the check.
inline bool snowflake_may_execute(Oid function) {
#if PG_VERSION_NUM >= 160000
    return object_aclcheck(ProcedureRelationId, function, GetUserId(), ACL_EXECUTE) == ACLCHECK_OK;
#else
    return pg_proc_aclcheck(function, GetUserId(), ACL_EXECUTE) == ACLCHECK_OK;
#endif
}

// Whether synchronous_standby_names names standbys, as the walsenders see it. Newer minor
// releases (18, and 15.20 as Debian ships it) keep this as status bits that are valid only once
// the checkpointer has set them; older ones (16.2, for one) keep a flag.
inline bool snowflake_synchronous_standbys_defined() {
    const volatile WalSndCtlData *control = WalSndCtl;
#ifdef SYNC_STANDBY_INIT
    const bits8 status = control->sync_standbys_status;
    if ((status & SYNC_STANDBY_INIT) == 0) {
        return SyncRepStandbyNames != nullptr && SyncRepStandbyNames[0] != '\0';
    }
    return (status & SYNC_STANDBY_DEFINED) != 0;
#else
    return control->sync_standbys_defined;
#endif
}

// The WAL position that every synchronous standby has flushed. Read without SyncRepLock: an
// 8-byte aligned load is atomic, and a stale value only makes the caller look again.
inline XLogRecPtr snowflake_synchronous_standbys_flushed_lsn() {
    const volatile WalSndCtlData *control = WalSndCtl;
    return control->lsn[SYNC_REP_WAIT_FLUSH];
}
