// The durable mark: a timestamp at or past every timestamp this server issued, kept in the data
// directory and in WAL, so that neither a restart, nor a crash, nor a failover reissues an id.
//
// One function writes the mark (move_mark) and one raises the generator
// (snowflake_raise_generator). Every path goes through them: an id's extension of the lease, a
// read of the settled bound, WAL replay, the restore at start-up and the floor from stored keys.
// Both follow the rules of src/core/mark_rules.hpp: no write below the highest mark known, no
// write outside the layout, no raise that lowers the generator. `make boundarycheck` fails when
// another file calls the raw write or raise.
//
// Locking. mark_lock (one LWLock of the "snowflake" tranche) serialises the writes: only its
// holder writes the file and the WAL record, flushes that record (so that walsenders ship it) and
// records it as the logged mark. Publishing a logged mark as durable_mark_ms, the limit every
// generating backend loads, happens outside the lock: at once without synchronous standbys, or
// once they have flushed the record, so that a wait for a standby never holds the lock. No
// extension is waited for in LWLockAcquire, which no cancel ends: a backend that cannot issue an
// id before the extension polls for the lock (acquire_mark_lock_unless_extended), so that a holder
// stuck in fsync keeps no cancel, statement_timeout or termination from its waiters; the holder
// itself answers them only once the kernel returns. Generating backends proceed without the lock
// while the clock is below the published mark, so the fsyncs of an extension are never on the path
// of other backends' ids. WAL replay (the startup process) takes the lock while no backend
// generates. The error-boundary rules are stated at the top of module.cpp.

#include <cerrno>
#include <fcntl.h>
#include <unistd.h>

extern "C" {
#include "postgres.h"

#include "access/xlog.h"
#include "access/xlog_internal.h"
#include "access/xloginsert.h"
#include "access/xlogreader.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "replication/syncrep.h"
#include "replication/walsender.h"
#include "storage/fd.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "utils/wait_event.h"
}

#include <algorithm>

#include "core/generator.hpp"
#include "core/mark_file.hpp"
#include "core/mark_rules.hpp"
#include "pg/compat.hpp"
#include "pg/mark/mark.hpp"
#include "pg/mark/mark_parts.hpp"
#include "pg/wal_records.hpp"
#include "pg/settings.hpp"
#include "pg/shared_state.hpp"

namespace {

constexpr char kMarkTempFileName[] = "snowflake_mark.tmp";

// What every failure to write the mark tells the operator.
constexpr char kWriteFailureDetail[] =
    "No id past the current mark is issued until the mark can be written.";
constexpr char kWriteFailureHint[] =
    "Fix what keeps the server from writing to its data directory (write access for its "
    "operating-system user, free space, a failing device: the error and the server log say "
    "which); generation resumes by itself once the file can be written.";

// Reports a failed step of writing the mark file at elevel; errno says why.
void report_write_failure(int elevel, const char *step, const char *file_name) {
    ereport(elevel, (errcode_for_file_access(),
                     errmsg("could not %s snowflake mark file \"%s\": %m", step, file_name),
                     errdetail("%s", kWriteFailureDetail), errhint("%s", kWriteFailureHint)));
}

// Writes the mark to a temporary file and renames it into place; durable_rename fsyncs the file
// and the directory. The temporary file is created anew, so that whatever stood at its name (a
// FIFO would block the open for ever) is replaced or reported. Returns false after reporting at
// elevel, when elevel lets it return.
bool write_mark_file(int64 mark_unix_ms, int64 node_bits, int elevel) {
    const snowflake::MarkFileText text =
        snowflake::format_mark_file(mark_unix_ms, GetSystemIdentifier(), node_bits);
    if (unlink(kMarkTempFileName) != 0 && errno != ENOENT) {
        report_write_failure(elevel, "remove", kMarkTempFileName);
        return false;
    }
    const int fd = OpenTransientFile(kMarkTempFileName, O_WRONLY | O_CREAT | O_EXCL | PG_BINARY);
    if (fd < 0) {
        report_write_failure(elevel, "create", kMarkTempFileName);
        return false;
    }
    errno = 0;
    if (write(fd, text.bytes, text.size) != static_cast<ssize_t>(text.size)) {
        const int write_errno = errno != 0 ? errno : ENOSPC;
        CloseTransientFile(fd);
        errno = write_errno;
        report_write_failure(elevel, "write", kMarkTempFileName);
        return false;
    }
    if (CloseTransientFile(fd) != 0) {
        report_write_failure(elevel, "close", kMarkTempFileName);
        return false;
    }
    // durable_rename logs the system's reason itself; the error that follows says what to do.
    if (durable_rename(kMarkTempFileName, kMarkFileName, LOG) != 0) {
        ereport(elevel,
                (errcode_for_file_access(),
                 errmsg("could not put snowflake mark file \"%s\" in place", kMarkFileName),
                 errdetail("%s The server log has the system's reason.", kWriteFailureDetail),
                 errhint("%s", kWriteFailureHint)));
        return false;
    }
    return true;
}

// Several processes may raise the same shared value; none may lower it.
void raise_to(std::atomic<int64_t> &value, int64_t at_least) {
    int64_t current = value.load(std::memory_order_relaxed);
    while (current < at_least &&
           !value.compare_exchange_weak(current, at_least, std::memory_order_release,
                                        std::memory_order_relaxed)) {
    }
}

// A mark read from the file or replayed from WAL is durable already: the generator, the logged
// mark and the issue limit are raised to it, never lowered, so that the next write plans from it.
void adopt_mark(SnowflakeShared *shared, int64 mark_unix_ms) {
    snowflake_raise_generator(shared, mark_unix_ms, GeneratorRaise::kLease);
    raise_to(shared->logged_mark_ms, mark_unix_ms);
    raise_to(shared->durable_mark_ms, mark_unix_ms);
}

// The highest mark this server knows to be durable: restored, replayed or written since the start.
int64 highest_known_mark(const SnowflakeShared *shared) {
    return Max(shared->logged_mark_ms.load(std::memory_order_acquire),
               shared->durable_mark_ms.load(std::memory_order_acquire));
}

// The mark and, since 1.10, the node fields of the ids it covers; a record of an older primary
// holds the mark alone (node_bits -1).
struct MarkRecord {
    int64 mark_unix_ms;
    int64 node_bits;
};

// The pair a record without one speaks for (a record of a primary before 1.10): the one this
// standby is set to, which it inherits from its primary; -1 while none is set.
int64 configured_node_bits() {
    const snowflake::NodeResult configured =
        snowflake::make_node(snowflake_datacenter_id_setting, snowflake_machine_id_setting);
    return configured.status == snowflake::CodecStatus::kOk ? configured.node.bits : -1;
}

// Logged and flushed before the mark is used: walsenders ship only flushed WAL, so a record left
// in the WAL buffers (while one long statement generates and nothing commits) would never reach a
// standby, which after a failover would reissue the ids under it. Returns the record's end.
XLogRecPtr log_mark(int64 mark_unix_ms, int64 node_bits) {
    MarkRecord mark_record{mark_unix_ms, node_bits};
    XLogBeginInsert();
    XLogRegisterData(reinterpret_cast<char *>(&mark_record), sizeof(mark_record));
    const XLogRecPtr end = XLogInsert(kSnowflakeRmgrId, kXlogMark);
    XLogFlush(end);
    return end;
}

// The one write of the mark, under mark_lock: the core's plan says whether and what to write, and
// never plans a mark below the highest known. The file comes first, then (outside recovery) the
// flushed WAL record, then the logged mark: a base backup that copies the old file starts from a
// redo point before the record, and no id under the new mark exists before both are durable. A
// failure is reported at elevel, and nothing in memory has moved.
void move_mark(SnowflakeShared *shared, const snowflake::MarkPlan &plan, int64 node_bits,
               bool log_wal, int elevel) {
    Assert(LWLockHeldByMe(shared->mark_lock));
    if (plan.move != snowflake::MarkMove::kWrite ||
        plan.mark_unix_ms <= highest_known_mark(shared) ||
        !write_mark_file(plan.mark_unix_ms, node_bits, elevel)) {
        return;
    }
    shared->mark_node_bits.store(node_bits);
    if (log_wal) {
        shared->logged_mark_lsn.store(log_mark(plan.mark_unix_ms, node_bits),
                                      std::memory_order_relaxed);
    }
    raise_to(shared->logged_mark_ms, plan.mark_unix_ms);
}

// Whether synchronous standbys are asked for, as PostgreSQL itself decides before a commit waits
// (no walsenders, or single-user mode, means none), whatever this session's synchronous_commit.
bool synchronous_standbys_named() {
    return max_wal_senders > 0 && IsUnderPostmaster && SyncRepStandbyNames != nullptr &&
           SyncRepStandbyNames[0] != '\0';
}

// Whether the synchronous standbys, if any are named, have flushed the WAL up to lsn. Then a
// failover to one of them cannot reissue an id under the mark of that record.
bool standbys_have(XLogRecPtr lsn) {
    return !synchronous_standbys_named() || snowflake_synchronous_standbys_flushed_lsn() >= lsn;
}

// The longest pause between two looks at the standbys' position.
constexpr long kSynchronousPollMaxMs = 16;

// Walsenders wake only the waiters in their own queue, which is for commits; this wait polls
// instead, backing off to kSynchronousPollMaxMs, and a cancel or statement_timeout ends it with
// an error before any id under the new mark is issued.
void wait_for_synchronous_standbys(XLogRecPtr lsn) {
    const uint32 wait_event = snowflake_wait_event("SnowflakeSyncStandby");
    long poll_ms = 1;
    while (!standbys_have(lsn)) {
        (void)WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, poll_ms,
                        wait_event);
        ResetLatch(MyLatch);
        CHECK_FOR_INTERRUPTS();
        poll_ms = Min(poll_ms * 2, kSynchronousPollMaxMs);
    }
}

// Makes the logged mark the limit of issued timestamps once the synchronous standbys have it;
// with wait false it gives up instead of waiting for them, and a later call publishes it.
void publish_logged_mark(SnowflakeShared *shared, bool wait) {
    const int64 logged = shared->logged_mark_ms.load(std::memory_order_acquire);
    // Loaded after the mark: if another extension came in between, this is a later record's end,
    // which covers the mark too.
    const XLogRecPtr lsn = shared->logged_mark_lsn.load(std::memory_order_relaxed);
    if (!standbys_have(lsn)) {
        if (!wait) {
            return;
        }
        wait_for_synchronous_standbys(lsn);
    }
    raise_to(shared->durable_mark_ms, logged);
}

// The longest pause between two attempts at the mark lock.
constexpr long kMarkLockPollMaxMs = 4;

// Takes the mark lock for an extension that the caller cannot issue an id without, unless the
// holder's extension covers now_unix_ms first (then returns false). LWLockAcquire would sleep on a
// semaphore that no cancel, statement_timeout or termination ends, for as long as the holder's
// fsync takes (a hung device or NFS server can keep it in the kernel for minutes); this polls
// instead, backing off to kMarkLockPollMaxMs, and an interrupt ends the wait with an error
// before any id under a new mark is issued.
bool acquire_mark_lock_unless_extended(SnowflakeShared *shared, int64 now_unix_ms) {
    const uint32 wait_event = snowflake_wait_event("SnowflakeMarkLock");
    long poll_ms = 1;
    for (;;) {
        (void)WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, poll_ms,
                        wait_event);
        ResetLatch(MyLatch);
        CHECK_FOR_INTERRUPTS();
        if (!snowflake::lease_needs_extension(
                now_unix_ms, shared->logged_mark_ms.load(std::memory_order_acquire))) {
            return false;
        }
        if (LWLockConditionalAcquire(shared->mark_lock, LW_EXCLUSIVE)) {
            return true;
        }
        poll_ms = Min(poll_ms * 2, kMarkLockPollMaxMs);
    }
}

// The record may not be aligned in the WAL buffer, so it is copied out.
MarkRecord record_mark(XLogReaderState *record) {
    MarkRecord mark_record{0, -1};
    memcpy(&mark_record, XLogRecGetData(record),
           Min(XLogRecGetDataLen(record), sizeof(mark_record)));
    return mark_record;
}

}  // namespace

// Replay keeps a standby's generator above every mark of its primary, so that after promotion
// it issues only ids above those the primary issued up to the last WAL received. The file comes
// first: if it cannot be written, the startup process stops (an ERROR is FATAL there) rather than
// replay on with a mark that a restart of this standby would forget. A record of a primary before
// 1.10 names no pair; a standby with no pair set writes "none", so that its first id after a
// promotion waits for a read of the stored keys of the pair it is given.
void snowflake_redo_mark(XLogReaderState *record) {
    SnowflakeShared *shared = snowflake_shared;
    if (shared == nullptr) {
        return;
    }
    const MarkRecord mark_record = record_mark(record);
    const int64 node_bits =
        mark_record.node_bits >= 0 ? mark_record.node_bits : configured_node_bits();
    const snowflake::MarkPlan plan =
        snowflake::plan_mark(highest_known_mark(shared), mark_record.mark_unix_ms);
    // 1.10 logged a mark at a clock before the epoch when a bound was read there: it covers no
    // id, and is passed over.
    if (plan.move == snowflake::MarkMove::kOutOfRange &&
        mark_record.mark_unix_ms < snowflake::kEpochUnixMs) {
        ereport(LOG, (errmsg("snowflake: passed over a mark record of %lld Unix ms, before the "
                             "Snowflake epoch, which covers no id",
                             static_cast<long long>(mark_record.mark_unix_ms))));
        return;
    }
    if (plan.move == snowflake::MarkMove::kOutOfRange) {
        ereport(ERROR,
                (errcode(ERRCODE_DATA_CORRUPTED),
                 errmsg("snowflake mark record holds %lld, past the Snowflake timestamp range",
                        static_cast<long long>(mark_record.mark_unix_ms)),
                 errdetail("No release of this extension writes a mark past the layout's end "
                           "(2080-07-10): the record is damaged, and replay stops before it."),
                 errhint("Replay from another copy of the WAL, or rebuild this server from a new "
                         "base backup of its primary.")));
    }
    if (plan.move == snowflake::MarkMove::kCovered) {
        return;
    }
    if (shared->mark_file_state != MarkFileState::kUsable) {
        // No file takes the mark, so it is no issue limit and covers no bound; generation is
        // refused here until an operator deals with the file anyway.
        shared->mark_node_bits.store(node_bits);
        snowflake_raise_generator(shared, plan.mark_unix_ms, GeneratorRaise::kLease);
        return;
    }
    LWLockAcquire(shared->mark_lock, LW_EXCLUSIVE);
    move_mark(shared, plan, node_bits, false, ERROR);
    LWLockRelease(shared->mark_lock);
    adopt_mark(shared, plan.mark_unix_ms);
}

void snowflake_describe_mark(StringInfo buf, XLogReaderState *record) {
    const MarkRecord mark_record = record_mark(record);
    appendStringInfo(buf, "mark_unix_ms %lld node_bits %lld",
                     static_cast<long long>(mark_record.mark_unix_ms),
                     static_cast<long long>(mark_record.node_bits));
}

void snowflake_raise_generator(SnowflakeShared *shared, int64_t through_unix_ms,
                               GeneratorRaise raise) {
    if (raise == GeneratorRaise::kLease) {
        raise_to(shared->lease_floor_ms, through_unix_ms);
    }
    snowflake::raise_floor(shared->generator, through_unix_ms);
}

void snowflake_adopt_restored_mark(SnowflakeShared *shared, int64_t mark_unix_ms,
                                   int64_t node_bits) {
    adopt_mark(shared, mark_unix_ms);
    shared->mark_node_bits.store(node_bits);
}

void snowflake_extend_durable_mark(SnowflakeShared *shared, int64_t now_unix_ms, int64_t node_bits,
                                   bool wait, int elevel) {
    if (snowflake::lease_needs_extension(now_unix_ms,
                                         shared->logged_mark_ms.load(std::memory_order_acquire))) {
        if (!LWLockConditionalAcquire(shared->mark_lock, LW_EXCLUSIVE)) {
            if (!wait) {
                return;
            }
            if (!acquire_mark_lock_unless_extended(shared, now_unix_ms)) {
                publish_logged_mark(shared, true);
                return;
            }
        }
        if (snowflake::lease_needs_extension(
                now_unix_ms, shared->logged_mark_ms.load(std::memory_order_relaxed))) {
            move_mark(shared, snowflake::plan_lease(highest_known_mark(shared), now_unix_ms),
                      node_bits, true, elevel);
        }
        LWLockRelease(shared->mark_lock);
    }
    publish_logged_mark(shared, wait);
}
