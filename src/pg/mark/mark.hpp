// The door of the durable mark's room (src/pg/mark/): its file in the data directory, its WAL
// record and its use by the generator. The one write of the mark and the one raise of the
// generator are here (durable_mark.cpp, doc/design.md "One write, one raise"); the mark's reading
// at start-up is in mark_restore.cpp. Include only after postgres.h.
#pragma once

#include <cstdint>

#include "access/xlogreader.h"
#include "lib/stringinfo.h"

#include "pg/shared_state.hpp"

inline constexpr char kMarkFileName[] = "snowflake_mark";

// What start-up found of the mark file.
enum class MarkRestore : uint8_t {
    kRestored,  // read and verified: the generator starts from its mark
    kNoFile,    // none at all: a new data directory, pg_upgrade, a restore without it, a removal
    kForeign,   // another cluster's, or of the first format (none): kept as a lower bound only
    kRefused,   // present but unusable (mark_file_state says why): generation is refused
};

// At start-up and after a crash re-initialisation the generator starts from the file's mark
// (mark_restore.cpp).
MarkRestore snowflake_restore_durable_mark(SnowflakeShared *shared);

// What a raise of the generator stands for.
enum class GeneratorRaise : uint8_t {
    // A mark or a stored key: the lease floor is raised with it (first, so that no backend sees
    // the raised state without it). While nothing newer is issued, a clock up to a lease behind
    // it is waited out like the rest of a lease.
    kLease,
    // A clock reading, as a read of the settled bound raises a quiet generator: a clock behind it
    // later is a step back like any other.
    kClock,
};

// The one raise of the generator: through a millisecond, never lowering it. A raise stays in
// memory; whatever the server hands out above the mark waits for the mark to cover it.
void snowflake_raise_generator(SnowflakeShared *shared, int64_t through_unix_ms,
                               GeneratorRaise raise);

// Refuses generation, naming the file and the way out, when the mark could not be restored.
void snowflake_require_usable_mark(const SnowflakeShared *shared);

// Moves the mark a lease past now, for the ids of a node pair, unless it is there already: file,
// flushed WAL record, the synchronous standbys' flush, then shared memory. It never lowers the
// mark, and writes nothing for a clock outside the layout. With wait false it leaves the work to
// whoever already holds the lock and does not wait for standbys; with wait true a cancel,
// statement_timeout or termination ends its waits, for the lock as for the standbys, with an
// error. A file that cannot be written is reported at elevel: ERROR for an id, WARNING for a read
// of the bound, which then keeps to what the mark covers already.
void snowflake_extend_durable_mark(SnowflakeShared *shared, int64_t now_unix_ms, int64_t node_bits,
                                   bool wait, int elevel);

// Replay of a mark record (wal/resource_manager.cpp dispatches to it): the file first, then the
// generator and the issue limit, never lowering any.
void snowflake_redo_mark(XLogReaderState *record);

// What pg_waldump and replay errors show for a mark record.
void snowflake_describe_mark(StringInfo buf, XLogReaderState *record);
