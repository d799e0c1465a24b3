// The durable mark (durable_mark.cpp): its file in the data directory, its WAL record and its
// use by the generator. Include only after postgres.h.
#pragma once

#include <cstdint>

#include "access/rmgr.h"

#include "pg/shared_state.hpp"

inline constexpr char kMarkFileName[] = "snowflake_mark";

// The resource manager id of the mark records: 128, RM_EXPERIMENTAL_ID, the id PostgreSQL sets
// aside for extensions that have not registered one (README "Limits" says how an id is
// registered). Every record in WAL carries it, and only a library that registers the same id can
// replay them: a release that changes it must replay both ids until no WAL of the old one is left
// anywhere, standbys and archives included.
inline constexpr RmgrId kSnowflakeRmgrId = RM_EXPERIMENTAL_ID;
// The records: a mark, and a prepared transaction's claim (settled_prepared.cpp, 1.10).
inline constexpr uint8 kXlogMark = 0x00;
inline constexpr uint8 kXlogClaim = 0x10;

// What start-up found of the mark file.
enum class MarkRestore : uint8_t {
    kRestored,  // read and verified: the generator starts from its mark
    kNoFile,    // none at all: a new data directory, pg_upgrade, a restore without it, a removal
    kForeign,   // written by another cluster: its mark is kept, but it cannot stand for this one's
    kRefused,   // present but unusable (mark_file_state says why): generation is refused
};

// At start-up and after a crash re-initialisation the generator starts from the file's mark.
MarkRestore snowflake_restore_durable_mark(SnowflakeShared *shared);

// Raises the generator through a millisecond, never lowering it, and the lease floor with it
// (first, so that no backend sees the raised state without it): while nothing newer is issued, a
// clock up to a lease behind that millisecond is waited out like the rest of a lease.
void snowflake_raise_generator_through(SnowflakeShared *shared, int64_t through_unix_ms);

// At a clean stop of the postmaster: whether the mark file is in use and an id was issued since
// the start, so that the exact last timestamp can replace the lease. A start that issued nothing
// writes no mark: a raise of the generator by a mark or by stored keys is no id of this data
// directory's history.
bool snowflake_final_mark_due(const SnowflakeShared *shared);

// Writes the exact last timestamp in place of the lease.
void snowflake_write_final_mark(SnowflakeShared *shared);

// Refuses generation, naming the file and the way out, when the mark could not be restored.
void snowflake_require_usable_mark(const SnowflakeShared *shared);

// Moves the mark a lease past now, for the ids of a node pair: file, flushed WAL record, the
// synchronous standbys' flush, then shared memory. With wait false it leaves the work to whoever
// already holds the lock and does not wait for standbys; with wait true a cancel,
// statement_timeout or termination ends its waits, for the lock as for the standbys, with an
// error.
void snowflake_extend_durable_mark(SnowflakeShared *shared, int64_t now_unix_ms, int64_t node_bits,
                                   bool wait);

// Registers the WAL resource manager that carries marks to standbys.
void snowflake_register_wal_resource_manager();
