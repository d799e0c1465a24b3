// The durable mark: a timestamp at or past every timestamp this server issued, kept in the data
// directory and in WAL, so that neither a restart, nor a crash, nor a failover reissues an id.
//
// Locking. mark_lock (one LWLock of the "snowflake" tranche) serialises extensions: only its
// holder writes the file and the WAL record, flushes that record (so that walsenders ship it) and
// records it as the logged mark. Publishing a logged mark as durable_mark_ms, the limit every
// generating backend loads, happens outside the lock: at once without synchronous standbys, or
// once they have flushed the record, so that a wait for a standby never holds the lock. No
// extension is waited for in LWLockAcquire, which no cancel ends: a backend that cannot issue an
// id before the extension polls for the lock (acquire_mark_lock_unless_extended), so that a holder
// stuck in fsync keeps no cancel, statement_timeout or termination from its waiters; the holder
// itself answers them only once the kernel returns. Generating backends proceed without the lock
// while the clock is below the published mark, so the fsyncs of an extension are never on the path
// of other backends' ids. WAL replay (the startup process) and the postmaster's final write run
// when no backend generates. The error-boundary rules are stated at the top of module.cpp.

#include <cerrno>
#include <fcntl.h>
#include <sys/stat.h>
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
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "utils/wait_event.h"
}

#include <algorithm>

#include "core/generator.hpp"
#include "core/mark_file.hpp"
#include "pg/compat.hpp"
#include "pg/ids/durable_mark.hpp"
#include "pg/ids/keys_floor.hpp"
#include "pg/ids/settled_parts.hpp"
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

// Raises the generator and the mark to at least mark_unix_ms, never lowering either.
void adopt_mark(SnowflakeShared *shared, int64 mark_unix_ms) {
    snowflake_raise_generator_through(shared, mark_unix_ms);
    raise_to(shared->durable_mark_ms, mark_unix_ms);
}

// Refuses generation for a mark file that exists but cannot be read, and says why in the log.
void record_unreadable_mark_file(SnowflakeShared *shared, int file_errno) {
    shared->mark_file_state = MarkFileState::kUnreadable;
    shared->mark_file_errno = file_errno;
    errno = file_errno;
    ereport(LOG, (errcode_for_file_access(),
                  errmsg("could not read snowflake mark file \"%s\": %m; snowflake_nextval() "
                         "will refuse to generate ids",
                         kMarkFileName)));
}

// The mark and, since 1.10, the node fields of the ids it covers; a record of an older primary
// holds the mark alone (node_bits -1).
struct MarkRecord {
    int64 mark_unix_ms;
    int64 node_bits;
};

// The pair a mark without one speaks for (a version 1 file, a record of an older primary): the one
// this server is set to, whose standby inherits its primary's; -1 while none is set.
int64 configured_node_bits() {
    const snowflake::NodeResult configured =
        snowflake::make_node(snowflake_datacenter_id_setting, snowflake_machine_id_setting);
    return configured.status == snowflake::CodecStatus::kOk ? configured.node.bits : -1;
}

// The record may not be aligned in the WAL buffer, so it is copied out.
MarkRecord record_mark(XLogReaderState *record) {
    MarkRecord mark_record{0, -1};
    memcpy(&mark_record, XLogRecGetData(record),
           Min(XLogRecGetDataLen(record), sizeof(mark_record)));
    return mark_record;
}

// Replay keeps a standby's generator above every mark of its primary, so that after promotion
// it issues only ids above those the primary issued up to the last WAL received.
void redo_mark(XLogReaderState *record) {
    SnowflakeShared *shared = snowflake_shared;
    const MarkRecord mark_record = record_mark(record);
    const int64 mark = mark_record.mark_unix_ms;
    if (shared == nullptr || mark <= shared->durable_mark_ms.load(std::memory_order_relaxed)) {
        return;
    }
    const int64 node_bits =
        mark_record.node_bits >= 0 ? mark_record.node_bits : configured_node_bits();
    // The file comes first: if it cannot be written, the startup process stops (an ERROR is FATAL
    // there) rather than replay on with a mark that a restart of this standby would forget. A
    // record of an older primary on a standby with no pair set names no pair to write.
    if (shared->mark_file_state == MarkFileState::kUsable && node_bits >= 0) {
        write_mark_file(mark, node_bits, ERROR);
    }
    shared->mark_node_bits.store(node_bits);
    adopt_mark(shared, mark);
}

// Each record to its replay; an unknown one stops replay rather than be skipped.
void redo(XLogReaderState *record) {
    const uint8 info = XLogRecGetInfo(record) & ~XLR_INFO_MASK;
    if (info == kXlogMark) {
        redo_mark(record);
    } else if (info == kXlogClaim) {
        snowflake_redo_claim(record);
    } else {
        elog(PANIC, "snowflake_redo: unknown op code %u", info);
    }
}

// What pg_waldump and replay errors show for a record.
void describe(StringInfo buf, XLogReaderState *record) {
    if ((XLogRecGetInfo(record) & ~XLR_INFO_MASK) == kXlogClaim) {
        snowflake_describe_claim(buf, record);
        return;
    }
    const MarkRecord mark_record = record_mark(record);
    appendStringInfo(buf, "mark_unix_ms %lld node_bits %lld",
                     static_cast<long long>(mark_record.mark_unix_ms),
                     static_cast<long long>(mark_record.node_bits));
}

// The record type's name for pg_waldump's statistics.
const char *identify(uint8 info) {
    switch (info & ~XLR_INFO_MASK) {
        case kXlogMark:
            return "MARK";
        case kXlogClaim:
            return "CLAIM";
        default:
            return nullptr;
    }
}

RmgrData snowflake_rmgr = {
    "snowflake", redo, describe, identify, nullptr, nullptr, nullptr, nullptr,
};

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

}  // namespace

void snowflake_register_wal_resource_manager() {
    RegisterCustomRmgr(kSnowflakeRmgrId, &snowflake_rmgr);
}

void snowflake_raise_generator_through(SnowflakeShared *shared, int64_t through_unix_ms) {
    raise_to(shared->lease_floor_ms, through_unix_ms);
    snowflake::raise_floor(shared->generator, through_unix_ms);
}

bool snowflake_final_mark_due(const SnowflakeShared *shared) {
    return shared->mark_file_state == MarkFileState::kUsable &&
           snowflake_total_issued_ids(shared) > 0;
}

void snowflake_write_final_mark(SnowflakeShared *shared) {
    const int64 last_ms = snowflake::last_issued(shared->generator).unix_ms;
    if (write_mark_file(last_ms, shared->mark_node_bits.load(), LOG)) {
        snowflake_note_mark_written(shared, last_ms);
    }
}

MarkRestore snowflake_restore_durable_mark(SnowflakeShared *shared) {
    // lstat first: opening a FIFO would block the postmaster for ever, and a symbolic link (even
    // a dangling one) is not what this extension writes.
    struct stat status;
    if (lstat(kMarkFileName, &status) != 0) {
        if (errno == ENOENT) {
            return MarkRestore::kNoFile;
        }
        record_unreadable_mark_file(shared, errno);
        return MarkRestore::kRefused;
    }
    if (!S_ISREG(status.st_mode)) {
        shared->mark_file_state = MarkFileState::kNotRegularFile;
        ereport(LOG, (errmsg("snowflake mark file \"%s\" is not a regular file; "
                             "snowflake_nextval() will refuse to generate ids",
                             kMarkFileName)));
        return MarkRestore::kRefused;
    }
    const int fd = OpenTransientFile(kMarkFileName, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | PG_BINARY);
    if (fd < 0) {
        record_unreadable_mark_file(shared, errno);
        return MarkRestore::kRefused;
    }
    char bytes[snowflake::kMarkFileMaxSize + 1];
    const ssize_t size = read(fd, bytes, sizeof(bytes));
    const int read_errno = errno;
    CloseTransientFile(fd);
    if (size < 0) {
        record_unreadable_mark_file(shared, read_errno);
        return MarkRestore::kRefused;
    }
    const snowflake::MarkFileResult parsed =
        snowflake::parse_mark_file(bytes, static_cast<size_t>(size));
    if (parsed.status != snowflake::MarkFileStatus::kOk) {
        shared->mark_file_state = MarkFileState::kDamaged;
        ereport(LOG, (errmsg("snowflake mark file \"%s\" is damaged; snowflake_nextval() will "
                             "refuse to generate ids",
                             kMarkFileName)));
        return MarkRestore::kRefused;
    }
    adopt_mark(shared, parsed.mark_unix_ms);
    shared->mark_node_bits.store(parsed.node_bits >= 0 ? parsed.node_bits : configured_node_bits());
    // A version 1 file names no cluster: as before 1.10, it is taken for this one's.
    const uint64 own_system = GetSystemIdentifier();
    if (parsed.system_identifier != 0 && parsed.system_identifier != own_system) {
        ereport(LOG,
                (errmsg("snowflake mark file \"%s\" was written by another cluster",
                        kMarkFileName),
                 errdetail("It names system identifier %llu, and this cluster's is %llu. Its "
                           "mark is kept as a lower bound, but it cannot stand for the ids of "
                           "this data directory's history.",
                           static_cast<unsigned long long>(parsed.system_identifier),
                           static_cast<unsigned long long>(own_system))));
        return MarkRestore::kForeign;
    }
    return MarkRestore::kRestored;
}

void snowflake_require_usable_mark(const SnowflakeShared *shared) {
    const char *remove_hint =
        "The file keeps ids unique across restarts. Make sure the system clock is past every id "
        "this server issued, then remove the file and restart the server.";
    switch (shared->mark_file_state) {
        case MarkFileState::kUsable:
            return;
        case MarkFileState::kUnreadable: {
            const int file_errno = shared->mark_file_errno;
            errno = file_errno;
            ereport(
                ERROR,
                (errcode(ERRCODE_DATA_CORRUPTED),
                 errmsg("could not read snowflake mark file \"%s/%s\": %m", DataDir, kMarkFileName),
                 errdetail("No ids are issued until the mark is known."),
                 file_errno == EACCES || file_errno == EPERM
                     ? errhint("Give the operating-system user that runs the server read and "
                               "write access to the file, then restart the server. Do not "
                               "remove it: it keeps ids unique across restarts.")
                     : errhint("Fix what keeps the server from reading the file, then restart "
                               "the server. Only if the file is lost for good: make sure the "
                               "system clock is past every id this server issued, then remove "
                               "the file and restart the server.")));
            break;
        }
        case MarkFileState::kNotRegularFile:
            ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
                            errmsg("snowflake mark file \"%s/%s\" is not a regular file", DataDir,
                                   kMarkFileName),
                            errdetail("A FIFO, directory, symbolic link or device stands where "
                                      "this extension keeps its mark, so the highest timestamp "
                                      "already issued is unknown; no ids are issued."),
                            errhint("%s", remove_hint)));
            break;
        case MarkFileState::kDamaged:
            ereport(ERROR,
                    (errcode(ERRCODE_DATA_CORRUPTED),
                     errmsg("snowflake mark file \"%s/%s\" is damaged", DataDir, kMarkFileName),
                     errdetail("Its contents are malformed, fail their checksum or hold a "
                               "mark outside the Snowflake timestamp range, so the highest "
                               "timestamp already issued is unknown; no ids are issued."),
                     errhint("%s", remove_hint)));
            break;
    }
}

void snowflake_extend_durable_mark(SnowflakeShared *shared, int64_t now_unix_ms, int64_t node_bits,
                                   bool wait) {
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
            // File, then WAL, then memory: a base backup that copies the old file starts from a
            // redo point before the record, and no id under the new mark exists before both are
            // durable.
            const int64 extended = snowflake::extended_lease(now_unix_ms);
            write_mark_file(extended, node_bits, ERROR);
            shared->mark_node_bits.store(node_bits);
            shared->logged_mark_lsn.store(log_mark(extended, node_bits), std::memory_order_relaxed);
            shared->logged_mark_ms.store(extended, std::memory_order_release);
            snowflake_note_mark_written(shared, extended);
        }
        LWLockRelease(shared->mark_lock);
    }
    publish_logged_mark(shared, wait);
}
