// Restored copies: a base backup or a PITR restore carries its original's node ids and mark, so
// once it takes writes while the original still runs, both issue the same ids. The files that
// start such a copy are a cheap local signal: recovery.signal (a restore) or backup_label without
// standby.signal (a base backup started directly), where a failover target starts with
// standby.signal. doc/operations.md "Restoring a backup" says what the signal can and cannot tell.

#include <unistd.h>

extern "C" {
#include "postgres.h"

#include "access/xlog.h"
#include "miscadmin.h"
}

#include "pg/generation/generation.hpp"
#include "pg/settings.hpp"
#include "pg/shared_state.hpp"

namespace {

// What every warning about a restored copy tells the operator.
void report_restored_copy(const char *started_by) {
    ereport(WARNING,
            (errmsg("snowflake: this server was started from a backup (%s) with node ids %d/%d",
                    started_by, snowflake_datacenter_id_setting, snowflake_machine_id_setting),
             errdetail("A restored copy issues the same ids as the server it was copied from: if "
                       "that server still runs, ids of the two will collide."),
             errhint("Before this copy takes writes, give it a snowflake.datacenter_id and "
                     "snowflake.machine_id pair no other server uses, then reload; "
                     "snowflake_check_peers() finds a pair in use twice. If the original is gone "
                     "for good, restart this server once recovery has ended and the warning "
                     "stops.")));
}

}  // namespace

void snowflake_note_start_from_backup(SnowflakeShared *shared) {
    const bool standby = access(STANDBY_SIGNAL_FILE, F_OK) == 0;
    const bool restore = access(RECOVERY_SIGNAL_FILE, F_OK) == 0;
    const bool backup = access(BACKUP_LABEL_FILE, F_OK) == 0;
    if (standby || !(restore || backup)) {
        return;
    }
    strlcpy(shared->started_by, restore ? RECOVERY_SIGNAL_FILE : BACKUP_LABEL_FILE,
            sizeof(shared->started_by));
    shared->start_datacenter_id = snowflake_datacenter_id_setting;
    shared->start_machine_id = snowflake_machine_id_setting;
    report_restored_copy(shared->started_by);
}

void snowflake_warn_if_restored_copy(const SnowflakeShared *shared) {
    if (shared->started_by[0] != '\0' &&
        shared->start_datacenter_id == snowflake_datacenter_id_setting &&
        shared->start_machine_id == snowflake_machine_id_setting) {
        report_restored_copy(shared->started_by);
    }
}
