// The durable mark: a timestamp at or past every timestamp this server issued, kept in the data
// directory and in WAL, so that neither a restart, nor a crash, nor a failover reissues an id.
//
// Locking. mark_lock (one LWLock of the "snowflake" tranche) serialises extensions: only its
// holder writes the WAL record and the file, then publishes the new mark in shared memory with a
// release store. Generating backends only load the mark; they proceed without the lock while the
// clock is below it, so the fsync of an extension is never on the path of other backends' ids.
// WAL replay (the startup process) and the postmaster's final write run when no backend
// generates. The error-boundary rules are stated at the top of module.cpp.

#include <cerrno>
#include <fcntl.h>
#include <unistd.h>

extern "C" {
#include "postgres.h"

#include "access/xlog.h"
#include "miscadmin.h"
#include "storage/fd.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#if PG_VERSION_NUM >= 150000
#include "access/xlog_internal.h"
#include "access/xloginsert.h"
#include "access/xlogreader.h"
#include "lib/stringinfo.h"
#endif
}

#include <algorithm>

#include "core/generator.hpp"
#include "core/mark_file.hpp"
#include "pg/shared_state.hpp"

namespace {

constexpr char kMarkTempFileName[] = "snowflake_mark.tmp";

// Writes the mark to a temporary file and renames it into place; durable_rename fsyncs the file
// and the directory. Returns false after reporting at elevel, when elevel lets it return.
bool write_mark_file(int64 mark_unix_ms, int elevel) {
    const snowflake::MarkFileText text = snowflake::format_mark_file(mark_unix_ms);
    const int fd = OpenTransientFile(kMarkTempFileName, O_WRONLY | O_CREAT | O_TRUNC | PG_BINARY);
    if (fd < 0) {
        ereport(elevel,
                (errcode_for_file_access(),
                 errmsg("could not create snowflake mark file \"%s\": %m", kMarkTempFileName)));
        return false;
    }
    errno = 0;
    if (write(fd, text.bytes, text.size) != static_cast<ssize_t>(text.size)) {
        const int write_errno = errno != 0 ? errno : ENOSPC;
        CloseTransientFile(fd);
        errno = write_errno;
        ereport(elevel,
                (errcode_for_file_access(),
                 errmsg("could not write snowflake mark file \"%s\": %m", kMarkTempFileName)));
        return false;
    }
    if (CloseTransientFile(fd) != 0) {
        ereport(elevel,
                (errcode_for_file_access(),
                 errmsg("could not close snowflake mark file \"%s\": %m", kMarkTempFileName)));
        return false;
    }
    return durable_rename(kMarkTempFileName, kMarkFileName, elevel) == 0;
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
    snowflake::raise_floor(shared->generator, mark_unix_ms);
    raise_to(shared->lease_floor_ms, mark_unix_ms);
    raise_to(shared->durable_mark_ms, mark_unix_ms);
}

// When the postmaster exits normally (a fast, smart or immediate stop), every backend is gone and
// every id issued is in the state word, so the exact last timestamp replaces the lease and the
// next start has nothing to wait out. At a crash re-initialisation (code 1) the lease stays: the
// memory a crashed backend could have scribbled on is not trusted.
void save_final_mark(int code, Datum) {
    SnowflakeShared *shared = snowflake_shared;
    if (code != 0 || shared == nullptr || shared->mark_file_state != MarkFileState::kUsable) {
        return;
    }
    const snowflake::LastIssued last = snowflake::last_issued(shared->generator);
    if (last.any) {
        write_mark_file(last.unix_ms, LOG);
    }
}

#if PG_VERSION_NUM >= 150000

// No id is registered for this extension yet on the PostgreSQL wiki's list; see README.
constexpr RmgrId kSnowflakeRmgrId = RM_EXPERIMENTAL_ID;
constexpr uint8 kXlogMark = 0x00;

struct MarkRecord {
    int64 mark_unix_ms;
};

// The record may not be aligned in the WAL buffer, so it is copied out.
int64 record_mark(XLogReaderState *record) {
    MarkRecord mark_record;
    memcpy(&mark_record, XLogRecGetData(record), sizeof(mark_record));
    return mark_record.mark_unix_ms;
}

// Replay keeps a standby's generator above every mark of its primary, so that after promotion
// it issues only ids above those the primary issued up to the last WAL received.
void redo_mark(XLogReaderState *record) {
    const uint8 info = XLogRecGetInfo(record) & ~XLR_INFO_MASK;
    if (info != kXlogMark) {
        elog(PANIC, "snowflake_redo: unknown op code %u", info);
    }
    SnowflakeShared *shared = snowflake_shared;
    const int64 mark = record_mark(record);
    if (shared == nullptr || mark <= shared->durable_mark_ms.load(std::memory_order_relaxed)) {
        return;
    }
    // The file comes first: if it cannot be written, the startup process stops (an ERROR is FATAL
    // there) rather than replay on with a mark that a restart of this standby would forget.
    if (shared->mark_file_state == MarkFileState::kUsable) {
        write_mark_file(mark, ERROR);
    }
    adopt_mark(shared, mark);
}

// What pg_waldump and replay errors show for a record.
void describe_mark(StringInfo buf, XLogReaderState *record) {
    appendStringInfo(buf, "mark_unix_ms %lld", static_cast<long long>(record_mark(record)));
}

// The record type's name for pg_waldump's statistics.
const char *identify_mark(uint8 info) {
    return (info & ~XLR_INFO_MASK) == kXlogMark ? "MARK" : nullptr;
}

RmgrData snowflake_rmgr = {
    "snowflake", redo_mark, describe_mark, identify_mark, nullptr, nullptr, nullptr, nullptr,
};

// Logged before the mark is used, so that any WAL carrying an id under it also carries the mark.
void log_mark(int64 mark_unix_ms) {
    MarkRecord mark_record{mark_unix_ms};
    XLogBeginInsert();
    XLogRegisterData(reinterpret_cast<char *>(&mark_record), sizeof(mark_record));
    XLogInsert(kSnowflakeRmgrId, kXlogMark);
}

#endif

}  // namespace

void snowflake_register_wal_resource_manager() {
#if PG_VERSION_NUM >= 150000
    RegisterCustomRmgr(kSnowflakeRmgrId, &snowflake_rmgr);
#endif
}

void snowflake_restore_durable_mark(SnowflakeShared *shared) {
    if (!IsUnderPostmaster) {
        on_shmem_exit(save_final_mark, 0);
    }
    const int fd = OpenTransientFile(kMarkFileName, O_RDONLY | PG_BINARY);
    if (fd < 0) {
        if (errno != ENOENT) {
            shared->mark_file_state = MarkFileState::kUnreadable;
            shared->mark_file_errno = errno;
            ereport(LOG, (errcode_for_file_access(),
                          errmsg("could not open snowflake mark file \"%s\": %m; "
                                 "snowflake_nextval() will refuse to generate ids",
                                 kMarkFileName)));
        }
        return;
    }
    char bytes[snowflake::kMarkFileMaxSize + 1];
    const ssize_t size = read(fd, bytes, sizeof(bytes));
    const int read_errno = errno;
    CloseTransientFile(fd);
    if (size < 0) {
        shared->mark_file_state = MarkFileState::kUnreadable;
        shared->mark_file_errno = read_errno;
        errno = read_errno;
        ereport(LOG, (errcode_for_file_access(),
                      errmsg("could not read snowflake mark file \"%s\": %m; "
                             "snowflake_nextval() will refuse to generate ids",
                             kMarkFileName)));
        return;
    }
    const snowflake::MarkFileResult parsed =
        snowflake::parse_mark_file(bytes, static_cast<size_t>(size));
    if (parsed.status != snowflake::MarkFileStatus::kOk) {
        shared->mark_file_state = MarkFileState::kDamaged;
        ereport(LOG, (errmsg("snowflake mark file \"%s\" is damaged; snowflake_nextval() will "
                             "refuse to generate ids",
                             kMarkFileName)));
        return;
    }
    adopt_mark(shared, parsed.mark_unix_ms);
}

void snowflake_require_usable_mark(const SnowflakeShared *shared) {
    if (shared->mark_file_state == MarkFileState::kUsable) {
        return;
    }
    const char *hint =
        "The file keeps ids unique across restarts. Make sure the system clock is past every id "
        "this server issued, then remove the file and restart the server.";
    if (shared->mark_file_state == MarkFileState::kUnreadable) {
        errno = shared->mark_file_errno;
        ereport(ERROR,
                (errcode(ERRCODE_DATA_CORRUPTED),
                 errmsg("could not read snowflake mark file \"%s/%s\": %m", DataDir, kMarkFileName),
                 errdetail("No ids are issued until the mark is known."), errhint("%s", hint)));
    }
    ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
                    errmsg("snowflake mark file \"%s/%s\" is damaged", DataDir, kMarkFileName),
                    errdetail("Its contents are malformed or fail their checksum, so the highest "
                              "timestamp already issued is unknown; no ids are issued."),
                    errhint("%s", hint)));
}

void snowflake_extend_durable_mark(SnowflakeShared *shared, int64_t now_unix_ms, bool wait) {
    if (wait) {
        LWLockAcquire(shared->mark_lock, LW_EXCLUSIVE);
    } else if (!LWLockConditionalAcquire(shared->mark_lock, LW_EXCLUSIVE)) {
        return;
    }
    const int64 mark = shared->durable_mark_ms.load(std::memory_order_acquire);
    if (snowflake::lease_needs_extension(now_unix_ms, mark)) {
        // File, then WAL, then memory: a base backup that copies the old file starts from a redo
        // point before the record, and no id under the new mark exists before both are written.
        const int64 extended = snowflake::extended_lease(now_unix_ms);
        write_mark_file(extended, ERROR);
#if PG_VERSION_NUM >= 150000
        log_mark(extended);
#endif
        shared->durable_mark_ms.store(extended, std::memory_order_release);
    }
    LWLockRelease(shared->mark_lock);
}
