// Module set-up: _PG_init, the GUCs and the shared-memory hooks of the snowflake extension.
//
// Concurrency. One SnowflakeShared struct per server instance lives in shared memory. Its
// generator word is changed only by compare-and-swap (see core/generator.hpp), so no lock is ever
// taken to issue an id. AddinShmemInitLock is held only while the struct is created at start-up;
// the mark file and the other files of the data directory are read after it is released, before
// any other process exists;
// the first LWLock of the "snowflake" tranche serialises the writes of the durable mark (see
// mark/durable_mark.cpp), about twice a second at most, and the second the first read of the
// prepared transactions' claims (see settled/settled_prepared.cpp); the one of the "snowflake
// fleet" tranche guards the fleet guard's results (see fleet_shared.hpp); a spinlock guards the
// floor from keys' record of the keys that hold generation back and of a failed read, for a few
// copies at a time, and a condition variable wakes the calls that wait for the read (see
// keys_readers.cpp).
// The counters for snowflake_info() are one slot per PGPROC, each written only by its owner with a
// plain atomic store; the rare events (sequence waits, clock rollbacks) use a shared fetch_add.
//
// Error boundary. Every translation unit is compiled with -fno-exceptions, so no C++ exception can
// exist, let alone cross an extern "C" entry point. ereport() longjmps; it may only run where no
// C++ frame owns a non-trivial destructor. The glue holds no such objects: the only C++ values it
// keeps are core results, and the core static_asserts that they are trivially destructible.

#include <new>

extern "C" {
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "utils/guc.h"
}

#include "core/layout.hpp"
#include "pg/compat.hpp"
#include "pg/changes/changes.hpp"
#include "pg/convert/convert.hpp"
#include "pg/fleet/fleet_guard.hpp"
#include "pg/fleet/fleet_memory.hpp"
#include "pg/fleet/fleet_setting.hpp"
#include "pg/functions/time_predicates.hpp"
#include "pg/generation/generation.hpp"
#include "pg/keys_floor/keys_floor.hpp"
#include "pg/mark/mark.hpp"
#include "pg/settings.hpp"
#include "pg/settled/settled.hpp"
#include "pg/shared_state.hpp"
#include "pg/wal/wal.hpp"

extern "C" {
SNOWFLAKE_MODULE_MAGIC;

void _PG_init(void);
}

namespace {

shmem_startup_hook_type previous_shmem_startup_hook = nullptr;
shmem_request_hook_type previous_shmem_request_hook = nullptr;

// Add-in shared memory must be requested from this hook.
void request_shared_memory() {
    if (previous_shmem_request_hook != nullptr) {
        previous_shmem_request_hook();
    }
    RequestAddinShmemSpace(snowflake_shared_state_size());
    // The mark's extensions, and the first read of the prepared transactions' claims.
    RequestNamedLWLockTranche("snowflake", 2);
    RequestAddinShmemSpace(snowflake_fleet_memory_size());
    snowflake_request_fleet_lock();
    RequestAddinShmemSpace(snowflake_claims_memory_size());
}

// When the postmaster exits normally (a fast, smart or immediate stop), the floor from stored
// keys arms itself again if nothing was issued since a stored key raised the generator: the
// raise is in memory only, and the next start reads the keys afresh (a key removed meanwhile
// holds nothing back). The mark file keeps its lease, which covers every id issued and every
// bound read; no stop writes a mark, since that would lower it. At a crash re-initialisation
// (code 1) nothing is done: the memory a crashed backend could have scribbled on is not trusted.
void rearm_floor_at_exit(int code, Datum) {
    SnowflakeShared *shared = snowflake_shared;
    if (code == 0 && shared != nullptr) {
        snowflake_keys_floor_rearm_at_stop(shared);
    }
}

// Runs in the postmaster at start and after every crash re-initialisation of shared memory.
void attach_shared_memory() {
    if (previous_shmem_startup_hook != nullptr) {
        previous_shmem_startup_hook();
    }
    LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
    bool found = false;
    void *memory = ShmemInitStruct("snowflake", snowflake_shared_state_size(), &found);
    auto *shared = static_cast<SnowflakeShared *>(memory);
    if (!found) {
        new (memory) SnowflakeShared();
        shared->mark_lock = &GetNamedLWLockTranche("snowflake")[0].lock;
        SpinLockInit(&shared->keys_floor.lock);
        ConditionVariableInit(&shared->keys_floor.changed);
        snowflake_init_id_counters(shared);
    }
    snowflake_attach_fleet_memory();
    snowflake_attach_claims_memory();
    LWLockRelease(AddinShmemInitLock);
    snowflake_shared = shared;
    // The files are read by the process that created the struct, outside the lock: the postmaster
    // (or a standalone backend), before any other process exists to look at the struct.
    if (!found) {
        if (!IsUnderPostmaster) {
            on_shmem_exit(rearm_floor_at_exit, 0);
        }
        const MarkRestore restore = snowflake_restore_durable_mark(shared);
        snowflake_arm_keys_floor(shared,
                                 IsBinaryUpgrade                     ? KeysFloorStart::kBinaryUpgrade
                                 : restore == MarkRestore::kNoFile   ? KeysFloorStart::kMarkMissing
                                 : restore == MarkRestore::kForeign  ? KeysFloorStart::kMarkForeign
                                                                     : KeysFloorStart::kMarkTrusted);
        snowflake_note_start_from_backup(shared);
    }
}

const struct config_enum_entry duplicate_actions[] = {
    {"warn", kFleetDuplicateWarn, false},
    {"refuse", kFleetDuplicateRefuse, false},
    {nullptr, 0, false},
};

// Never shown; snowflake.instance_token's value comes from its show hook.
char *instance_token_placeholder = nullptr;

// The fleet guard's settings (README "Fleet guard"). Only superusers may read them, since the
// connection strings may carry passwords; the instance token is for every member to read.
void define_fleet_settings() {
    DefineCustomStringVariable(
        "snowflake.fleet",
        "libpq connection strings of every server that generates ids, separated by semicolons.",
        "The same list on every server; each server recognises itself in it by its instance token.",
        &snowflake_fleet_setting, "", PGC_SIGHUP, GUC_SUPERUSER_ONLY, snowflake_check_fleet_setting,
        nullptr, nullptr);
    DefineCustomIntVariable("snowflake.fleet_check_interval",
                            "Time between two checks of the servers of snowflake.fleet.",
                            "0 turns the fleet guard off.", &snowflake_fleet_check_interval_setting,
                            60, 0, 86400, PGC_SIGHUP, GUC_UNIT_S | GUC_SUPERUSER_ONLY, nullptr,
                            nullptr, nullptr);
    DefineCustomEnumVariable(
        "snowflake.on_duplicate_node",
        "What this server does while another live server of the fleet holds its node pair.",
        "warn logs it; refuse also makes snowflake_nextval() fail until the duplicate is gone.",
        &snowflake_on_duplicate_node_setting, kFleetDuplicateWarn, duplicate_actions, PGC_SIGHUP,
        GUC_SUPERUSER_ONLY, nullptr, nullptr, nullptr);
    DefineCustomIntVariable("snowflake.max_clock_offset",
                            "Clock difference to a fleet member beyond which the guard warns.",
                            nullptr, &snowflake_max_clock_offset_setting, 1000, 0, 3600000,
                            PGC_SIGHUP, GUC_UNIT_MS | GUC_SUPERUSER_ONLY, nullptr, nullptr,
                            nullptr);
    DefineCustomStringVariable(
        "snowflake.instance_token",
        "Drawn at random when the server starts; tells this server from its clones.",
        "A copy of the data directory started elsewhere draws its own.",
        &instance_token_placeholder, "", PGC_INTERNAL, GUC_NOT_IN_SAMPLE | GUC_DISALLOW_IN_FILE,
        nullptr, nullptr, snowflake_show_instance_token);
}

// Defined in every process that loads the library, preloaded or not, so that SHOW works.
void define_settings() {
    snowflake_define_node_settings();
    DefineCustomIntVariable(
        "snowflake.max_clock_rollback_wait",
        "How long snowflake_nextval() waits for a clock that moved backwards before it refuses.",
        nullptr, &snowflake_max_clock_rollback_wait_setting, 0, 0, kMaxClockRollbackWaitLimitMs,
        PGC_SIGHUP, GUC_UNIT_MS, nullptr, nullptr, nullptr);
    DefineCustomIntVariable(
        "snowflake.key_floor_max_lead",
        "How far ahead of the clock a stored key may hold generation back after a start without "
        "the mark file.",
        "A key of this server's node pair further ahead stops generation until the clock passes "
        "it or a superuser releases it with snowflake_release_key().",
        &snowflake_key_floor_max_lead_setting, 60000, 0, kKeyFloorMaxLeadLimitMs, PGC_SIGHUP,
        GUC_UNIT_MS, nullptr, nullptr, nullptr);
    DefineCustomBoolVariable(
        "snowflake.time_predicates",
        "Lets the primary key answer comparisons of snowflake_timestamp(column) with a constant.",
        "Adds the equivalent condition on the column itself; results are the same either way.",
        &snowflake_time_predicates_setting, true, PGC_USERSET, 0, nullptr,
        snowflake_assign_time_predicates, nullptr);
    DefineCustomIntVariable(
        "snowflake.partition_owner_share",
        "How much of one run of snowflake_run_partition_maintenance() the tables of one owner may "
        "have.",
        "An owner's table starts only while her tables have had less; the rest wait for the next "
        "run.",
        &snowflake_partition_owner_share_setting, 120, 1, 86400, PGC_SUSET, GUC_UNIT_S, nullptr,
        nullptr, nullptr);
    define_fleet_settings();
    MarkGUCPrefixReserved("snowflake");
}

}  // namespace

// Settings and the planner and utility hooks always exist; shared memory only when preloaded,
// since only the postmaster can add it.
void _PG_init(void) {
    define_settings();
    snowflake_install_planner_hook();
    snowflake_install_changes_hook();
    snowflake_install_default_watch();
    if (!process_shared_preload_libraries_in_progress) {
        return;
    }
    previous_shmem_request_hook = shmem_request_hook;
    shmem_request_hook = request_shared_memory;
    previous_shmem_startup_hook = shmem_startup_hook;
    shmem_startup_hook = attach_shared_memory;
    snowflake_register_wal_resource_manager();
    snowflake_register_fleet_guard();
    snowflake_register_claim_callbacks();
}
