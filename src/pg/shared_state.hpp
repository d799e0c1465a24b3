// The server-wide state in shared memory and the settings, as seen by the glue's source files.
// Include only after postgres.h: this header is part of the glue, not of the core.
#pragma once

#include <atomic>
#include <cstdint>

extern "C" {
#include "storage/lwlock.h"
}

#include "core/generator.hpp"
#include "core/mark_file.hpp"

// One backend's count of issued ids, written only by the backend that owns the PGPROC slot of the
// same index, on a cache line of its own so that counting never contends.
struct alignas(64) IdCounter {
    std::atomic<uint64_t> ids{0};
};

// How the durable mark file was found at start-up; anything but kUsable stops generation.
enum class MarkFileState : uint32_t {
    kUsable,          // read and verified, or absent (a new data directory)
    kDamaged,         // not what this extension writes: malformed, checksum or range wrong
    kNotRegularFile,  // a FIFO, directory, symbolic link or device stands at the file's path
    kUnreadable,      // present but could not be read; mark_file_errno says why
};

// How many databases shared memory remembers as checked by the floor from keys (keys_floor.cpp).
inline constexpr uint32_t kMaxCheckedDatabases = 64;

// The shared state: the generator word on a cache line of its own; the durable mark, read on
// every call and written about twice a second, on another; then the rare-event counters.
// counter_count IdCounter slots follow the struct in the same shared-memory segment.
struct SnowflakeShared {
    alignas(64) snowflake::GeneratorState generator;
    // Persisted, and so the limit for every timestamp issued (core/generator.hpp, kLeaseMs).
    alignas(64) std::atomic<int64_t> durable_mark_ms{0};
    // The highest mark the generator state was raised to at start-up or by WAL replay: while the
    // last timestamp is this one, nothing was issued since, and a gap of up to a lease is the
    // rest of a lease to wait out, not a clock that moved backwards.
    std::atomic<int64_t> lease_floor_ms{0};
    // The newest mark in the file and flushed to WAL, and the end of its WAL record. It becomes
    // durable_mark_ms once the synchronous standbys, if any, have flushed that record too.
    std::atomic<int64_t> logged_mark_ms{0};
    std::atomic<uint64_t> logged_mark_lsn{0};
    // Set at start-up when there was no mark file, or not every database was checked since: the
    // first snowflake_nextval() in each database raises the generator above the keys already
    // stored (keys_floor.cpp).
    std::atomic<bool> keys_floor_pending{false};
    // The file that marked this start as one from a backup (restored_copy.cpp), or empty, and
    // the node ids then: a warning lasts until they change.
    char started_by[16] = {};
    int start_datacenter_id = -1;
    int start_machine_id = -1;
    MarkFileState mark_file_state = MarkFileState::kUsable;
    int mark_file_errno = 0;
    LWLock *mark_lock = nullptr;
    // The databases whose keys raised the generator since the start, under mark_lock.
    uint32_t checked_database_count = 0;
    Oid checked_databases[kMaxCheckedDatabases] = {};
    alignas(64) std::atomic<uint64_t> sequence_waits{0};
    std::atomic<uint64_t> clock_rollbacks{0};
    std::atomic<uint64_t> unslotted_ids{0};
    uint32_t counter_count = 0;
};

// Null unless the library was loaded through shared_preload_libraries.
extern SnowflakeShared *snowflake_shared;

extern int snowflake_datacenter_id_setting;
extern int snowflake_machine_id_setting;
extern int snowflake_max_clock_rollback_wait_ms;
extern bool snowflake_time_predicates_setting;

// The value postgresql.conf gave a node-id setting when the server rejected it at start (out of
// range, not a number), or null.
const char *snowflake_rejected_setting_value(const char *name);

// Adds one to this backend's issued-id count without touching another backend's cache line.
void snowflake_count_issued_id(SnowflakeShared *shared);

// Sums every backend's issued-id count, for snowflake_info().
uint64_t snowflake_total_issued_ids(const SnowflakeShared *shared);

// The durable mark (durable_mark.cpp). The file lives in the data directory.
inline constexpr char kMarkFileName[] = "snowflake_mark";

// At start-up and after a crash re-initialisation the generator starts from the file's mark; the
// postmaster also arranges to save the exact last timestamp when it stops cleanly. Returns
// whether there was no mark file at all.
bool snowflake_restore_durable_mark(SnowflakeShared *shared);

// Refuses generation, naming the file and the way out, when the mark could not be restored.
void snowflake_require_usable_mark(const SnowflakeShared *shared);

// Moves the mark a lease past now: file, flushed WAL record, the synchronous standbys' flush,
// then shared memory. With wait false it leaves the work to whoever already holds the lock and
// does not wait for standbys.
void snowflake_extend_durable_mark(SnowflakeShared *shared, int64_t now_unix_ms, bool wait);

// At start-up: arms the floor from keys after a start without a mark file, and keeps it armed
// across restarts until every database was checked (keys_floor.cpp).
void snowflake_arm_keys_floor(SnowflakeShared *shared, bool mark_file_missing);

// After a start without a mark file, raises the generator above the highest key of this
// database's columns whose default is the function nextval_oid, unless a backend of the same
// database already did.
void snowflake_check_database_keys(SnowflakeShared *shared, Oid nextval_oid);

// At start-up, records and logs whether this server starts as a restored copy of another.
void snowflake_note_start_from_backup(SnowflakeShared *shared);

// Warns the session, before its first id, that this restored copy still has its original's
// node ids.
void snowflake_warn_if_restored_copy(const SnowflakeShared *shared);

// Installs the planner hook of time_predicates.cpp.
void snowflake_install_planner_hook();

// Registers the WAL resource manager that carries marks to standbys.
void snowflake_register_wal_resource_manager();
