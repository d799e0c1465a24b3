// What differs between the PostgreSQL versions the glue builds against, in one place.
// Include only after postgres.h.
#pragma once

extern "C" {
#include "access/xlogdefs.h"
#include "replication/syncrep.h"
#include "replication/walsender_private.h"
}

// Whether synchronous_standby_names names standbys, as the walsenders see it. Newer minor
// releases (18, and 15.18 as Debian ships it) keep this as status bits that are valid only once
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
