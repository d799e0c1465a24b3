// The server-wide state in shared memory, as seen by the glue's source files (each unit's own
// functions are in its own header). Include only after postgres.h: it is part of the glue.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

extern "C" {
#include "storage/condition_variable.h"
#include "storage/lwlock.h"
#include "storage/spin.h"
}

#include "core/generator.hpp"
#include "core/mark_file.hpp"
#include "core/wait.hpp"

// Hot data is kept 128 bytes apart, not 64: the processor fetches cache lines in adjacent pairs,
// so a line next to one that another core writes all the time is slow to read as well.
inline constexpr size_t kFalseSharingBytes = 128;

// One backend's count of issued ids, written only by the backend that owns the PGPROC slot of the
// same index, apart from every other so that counting never contends.
struct alignas(kFalseSharingBytes) IdCounter {
    std::atomic<uint64_t> ids{0};
};

// How the durable mark file was found at start-up; anything but kUsable stops generation.
enum class MarkFileState : uint32_t {
    kUsable,          // read and verified, or absent (a new data directory)
    kDamaged,         // not what this extension writes: malformed, checksum or range wrong
    kNotRegularFile,  // a FIFO, directory, symbolic link or device stands at the file's path
    kUnreadable,      // present but could not be read; mark_file_errno says why
};

// Room for the database, table, column and owner of a key that holds generation back, each
// quoted (a name of quotes doubles in length).
inline constexpr size_t kKeySourceBytes = 1024;
// How many node pairs the layout has: 32 datacenters of 32 machines.
inline constexpr size_t kNodePairCount = 1024;
// Room for why the read of a database's keys failed.
inline constexpr size_t kReadFailureBytes = 512;

// The floor from stored keys (doc/operations.md "Upgrading PostgreSQL"): the gate a backend passes
// before its first id (keys_floor.cpp) and the background workers that read the keys
// (keys_readers.cpp) share it. Written at start-up, by the readers and by the few calls that find
// generation held; read once per backend before its first id.
struct KeysFloorState {
    // Set at start-up when the mark file was missing or not of this data directory's history, or
    // the read of the stored keys since was not complete: no id is issued until a background
    // worker has read the keys of every database and cleared it.
    std::atomic<bool> pending{false};
    // Whether the floor was armed at this start at all.
    std::atomic<bool> armed{false};
    // The millisecond through which a stored key ahead of the clock raised the generator, or 0:
    // while the last timestamp is this one, nothing was issued since, and a refusal names the key
    // rather than blaming the clock.
    std::atomic<int64_t> floor_ms{0};
    // The end of the window of stored keys that may raise the generator, fixed when the read
    // begins (core/key_floor.hpp), or 0 before it.
    std::atomic<int64_t> window_end_ms{0};
    // The key beyond the window that stops generation for the node bits beside it, set when the
    // read ends, or -1: cleared by snowflake_release_key(), passed by the clock, taken into the
    // window by a larger snowflake.key_floor_max_lead, or dropped by a read for another pair,
    // which keeps the floor armed across restarts.
    std::atomic<int64_t> beyond_hold{-1};
    std::atomic<int64_t> beyond_hold_node_bits{0};
    std::atomic<bool> hold_dropped{false};
    // The millisecond through which the floor raised the generator, until a mark at or past it
    // is in the file, or 0: snowflake_keys_unchecked stays until then, so that a restart or a
    // crash before the first id reads the keys again instead of trusting a mark below them.
    std::atomic<int64_t> unchecked_until_ms{0};
    // The node bits of the read under way or last done (-2 if a node id was unset then), the pair
    // a call asked the next read for (-1: the one set), and one bit per node pair read since the
    // start: a call with a pair not read asks for a read of its own.
    std::atomic<int64_t> read_node_bits{-2};
    std::atomic<int64_t> pair_requested{-1};
    std::atomic<uint64_t> read_pairs[kNodePairCount / 64] = {};
    // The one process that reads the keys (the launcher of the readers), and whether a backend
    // already asked the postmaster to start one.
    std::atomic<bool> reader_claimed{false};
    std::atomic<bool> reader_requested{false};
    // Broadcast when the read ends or a database's read fails, to the calls that wait for it.
    ConditionVariable changed;
    // The rest, under lock (held for a few copies only): the key behind floor_ms and where it is
    // stored; the highest key beyond the window and where, with how many keys and columns hold
    // one; the last database whose read succeeded; and why the read of a database failed, empty
    // while none has.
    slock_t lock;
    int64_t floor_key = -1;
    char floor_source[kKeySourceBytes] = {};
    int64_t beyond_key = -1;
    char beyond_source[kKeySourceBytes] = {};
    uint64_t beyond_keys = 0;
    uint32_t beyond_columns = 0;
    Oid last_read_database = 0;
    char read_failure[kReadFailureBytes] = {};
};

// The shared state: the generator word apart from everything else; the durable mark, read on
// every call and written about twice a second, apart again; the boundary watch, claimed once a
// millisecond while ids are used up; then the rare-event counters.
// counter_count IdCounter slots follow the struct in the same shared-memory segment.
struct SnowflakeShared {
    alignas(kFalseSharingBytes) snowflake::GeneratorState generator;
    // Persisted, and so the limit for every timestamp issued (core/generator.hpp, kLeaseMs).
    alignas(kFalseSharingBytes) std::atomic<int64_t> durable_mark_ms{0};
    // The node bits that the fleet guard found another live server holding, or -1:
    // snowflake_nextval() refuses for these bits while snowflake.on_duplicate_node is refuse
    // (fleet_refusal.cpp). Read on every call, written at most once a check.
    std::atomic<int64_t> fenced_node_bits{-1};
    // The highest mark the generator state was raised to at start-up or by WAL replay: while the
    // last timestamp is this one, nothing was issued since, and a gap of up to a lease is the
    // rest of a lease to wait out, not a clock that moved backwards.
    std::atomic<int64_t> lease_floor_ms{0};
    // The newest mark in the file and flushed to WAL, and the end of its WAL record. It becomes
    // durable_mark_ms once the synchronous standbys, if any, have flushed that record too.
    std::atomic<int64_t> logged_mark_ms{0};
    std::atomic<uint64_t> logged_mark_lsn{0};
    // The node fields of the ids the mark file speaks for (the pair of the ids whose extension
    // wrote it), or -1 while it speaks for none: a first id with another pair waits for a read of
    // that pair's stored keys (keys_floor.cpp).
    std::atomic<int64_t> mark_node_bits{-1};
    // The file that marked this start as one from a backup (restored_copy.cpp), or empty, and
    // the node ids then: a warning lasts until they change.
    char started_by[16] = {};
    int start_datacenter_id = -1;
    int start_machine_id = -1;
    MarkFileState mark_file_state = MarkFileState::kUsable;
    int mark_file_errno = 0;
    LWLock *mark_lock = nullptr;
    KeysFloorState keys_floor;
    alignas(kFalseSharingBytes) snowflake::BoundaryWatch boundary_watch;
    alignas(kFalseSharingBytes) std::atomic<uint64_t> sequence_waits{0};
    std::atomic<uint64_t> clock_rollbacks{0};
    std::atomic<uint64_t> unslotted_ids{0};
    uint32_t counter_count = 0;
};

// Null unless the library was loaded through shared_preload_libraries.
extern SnowflakeShared *snowflake_shared;

// The struct and one IdCounter per PGPROC slot after it: what module.cpp requests and creates.
Size snowflake_shared_state_size();

// Sets up the counters of a struct just created.
void snowflake_init_id_counters(SnowflakeShared *shared);

// The error of a function that needs shared memory in a backend that loaded the library without
// preloading it; detail says what the function keeps there.
[[noreturn]] void snowflake_report_not_preloaded(const char *detail);

// Adds one to this backend's issued-id count without touching another backend's cache line.
void snowflake_count_issued_id(SnowflakeShared *shared);

// Sums every backend's issued-id count, for snowflake_info().
uint64_t snowflake_total_issued_ids(const SnowflakeShared *shared);
