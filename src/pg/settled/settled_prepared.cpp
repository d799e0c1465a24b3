// The claims of prepared transactions, which outlive the backend that prepared them: an entry in
// shared memory, a file per transaction in snowflake_claims/ and a WAL record, so that a restart,
// a crash or a failover keeps them until the transaction is committed or rolled back.
//
// Concurrency. An entry is taken by a compare-and-swap of its xid from 0, and its claim written
// after; it is released by the bound that finds its transaction no longer in progress, claim
// first, then xid. The files are read once after a start, by the first bound, under the second
// LWLock of the "snowflake" tranche.

#include <algorithm>
#include <cinttypes>
#include <dirent.h>
#include <sys/stat.h>

extern "C" {
#include "postgres.h"

#include "access/clog.h"
#include "access/transam.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "access/xloginsert.h"
#include "access/xlogreader.h"
#include "miscadmin.h"
#include "storage/fd.h"
#include "storage/procarray.h"
}

#include "pg/compat.hpp"
#include "pg/settled/settled.hpp"
#include "pg/settled/settled_parts.hpp"
#include "pg/wal_records.hpp"
#include "pg/shared_state.hpp"

namespace {

constexpr char kClaimsDirectory[] = "snowflake_claims";

// The xid of an entry being released, which no transaction has (normal xids start at 3).
constexpr uint32_t kReleasing = 1;

// A claim as its file holds it, and as its WAL record carries it.
struct ClaimRecord {
    TransactionId xid;
    uint64_t lowest;
};

// The entry of a free slot, taken for xid, or nullptr when every entry is taken.
PreparedClaim *take_entry(TransactionId xid) {
    PreparedClaim *entries = snowflake_prepared_claims(snowflake_claims);
    for (uint32_t i = 0; i < snowflake_claims->prepared_count; i++) {
        uint32_t free_xid = 0;
        if (entries[i].xid.compare_exchange_strong(free_xid, xid)) {
            return &entries[i];
        }
    }
    return nullptr;
}

// The file of a transaction's claim, in the caller's buffer: replay calls this for every file on
// every claim record, and the startup process frees no memory between records.
struct ClaimPath {
    char text[sizeof(kClaimsDirectory) + 10];
};
ClaimPath claim_file_name(TransactionId xid) {
    ClaimPath path;
    snprintf(path.text, sizeof(path.text), "%s/%08X", kClaimsDirectory, xid);
    return path;
}

// Releases the entry of a transaction that is no longer in progress, and removes its file:
// its end is visible by then. One caller releases it, the one whose swap to kReleasing
// succeeds; false when the transaction is in progress or another caller got there first.
bool release_if_ended(PreparedClaim &entry) {
    uint32_t xid = entry.xid.load();
    if (!TransactionIdIsNormal(xid) || TransactionIdIsInProgress(xid) ||
        !entry.xid.compare_exchange_strong(xid, kReleasing)) {
        return false;
    }
    snowflake::release_claim(entry.claim);
    entry.xid.store(0);
    (void)unlink(claim_file_name(xid).text);
    return true;
}

// The xid a file of the claims' directory is named for; false for any other name.
bool xid_of_claim_file(const char *name, TransactionId *xid) {
    unsigned int parsed = 0;
    char tail = '\0';
    if (sscanf(name, "%8X%c", &parsed, &tail) != 1) {
        return false;
    }
    *xid = parsed;
    return true;
}

// Whether an xid was assigned yet, in this history or as far as replay has reached; the commit
// log may not hold one that was not.
bool assigned_yet(TransactionId xid) {
    return TransactionIdPrecedes(xid, XidFromFullTransactionId(ReadNextFullTransactionId()));
}

// Whether a transaction whose claim a standby replayed has ended there: the commit log says so,
// or the xid is older than what it still holds, which no prepared transaction can be. A file of
// an xid that replay has not reached yet (a base backup copies files written after its start)
// is kept, and its status not looked up, since the commit log may not hold it yet.
bool ended_in_recovery(TransactionId xid) {
    if (!assigned_yet(xid)) {
        return false;
    }
    return TransactionIdPrecedes(xid, snowflake_oldest_clog_xid()) || TransactionIdDidCommit(xid) ||
           TransactionIdDidAbort(xid);
}

// Removes the files of claims whose transactions have ended, while a standby replays: nothing
// else removes them before it is promoted.
void remove_ended_files_in_recovery() {
    DIR *directory = AllocateDir(kClaimsDirectory);
    if (directory == nullptr) {
        return;
    }
    struct dirent *entry;
    while ((entry = ReadDir(directory, kClaimsDirectory)) != nullptr) {
        TransactionId xid = InvalidTransactionId;
        if (xid_of_claim_file(entry->d_name, &xid) && TransactionIdIsNormal(xid) &&
            ended_in_recovery(xid)) {
            (void)unlink(claim_file_name(xid).text);
        }
    }
    FreeDir(directory);
}

// Holds a claim under xid in shared memory.
void keep_in_memory(TransactionId xid, uint64_t lowest) {
    PreparedClaim *entry = take_entry(xid);
    if (entry == nullptr) {
        ereport(ERROR, (errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
                        errmsg("no room to keep the ids of prepared transaction %u for the "
                               "settled bound",
                               xid),
                        errdetail("Every entry holds a prepared transaction that is still in "
                                  "progress."),
                        errhint("Commit or roll back prepared transactions (pg_prepared_xacts), "
                                "then try again.")));
    }
    snowflake::claim_from(entry->claim, lowest);
}

// Writes and syncs the file of a claim, so that a start after a crash finds it. elevel ERROR
// fails the PREPARE (or, in replay, stops the startup process) rather than forget it.
void write_claim_file(const ClaimRecord &record, int elevel) {
    if (MakePGDirectory(kClaimsDirectory) == 0) {
        // The new directory's entry must outlive a crash as the file in it does.
        (void)fsync_fname_ext(".", true, false, elevel);
    } else if (errno != EEXIST) {
        ereport(elevel, (errcode_for_file_access(),
                         errmsg("could not create directory \"%s\": %m", kClaimsDirectory)));
        return;
    }
    const ClaimPath claim_path = claim_file_name(record.xid);
    const char *path = claim_path.text;
    const int fd = OpenTransientFile(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | PG_BINARY);
    if (fd < 0) {
        ereport(elevel,
                (errcode_for_file_access(), errmsg("could not create file \"%s\": %m", path)));
        return;
    }
    char text[24];
    const ssize_t size = snprintf(text, sizeof(text), "%" PRIu64 "\n", record.lowest);
    errno = 0;
    if (write(fd, text, size) != size || pg_fsync(fd) != 0) {
        // A short write sets no errno: the disk is full.
        const int saved = errno != 0 ? errno : ENOSPC;
        (void)CloseTransientFile(fd);
        errno = saved;
        ereport(elevel,
                (errcode_for_file_access(), errmsg("could not write file \"%s\": %m", path)));
        return;
    }
    (void)CloseTransientFile(fd);
    (void)fsync_fname_ext(kClaimsDirectory, true, false, elevel);
}

// The lowest id a claim file holds: digits and a newline, as write_claim_file() writes them, or
// 0 for anything else, which holds every id back.
uint64_t read_claim_file(const char *path) {
    char text[32] = {};
    FILE *file = AllocateFile(path, "r");
    if (file == nullptr) {
        return 0;
    }
    const size_t size = fread(text, 1, sizeof(text) - 1, file);
    FreeFile(file);
    uint64_t lowest = 0;
    size_t i = 0;
    for (; i < size && text[i] >= '0' && text[i] <= '9'; i++) {
        const uint64_t digit = static_cast<uint64_t>(text[i] - '0');
        if (lowest > (snowflake::kClaimsNothing - 1 - digit) / 10) {
            return 0;
        }
        lowest = lowest * 10 + digit;
    }
    return i > 0 && i + 1 == size && text[i] == '\n' ? lowest : 0;
}

// Whether an entry already holds a claim of xid: one a PREPARE since the start made, whose file
// is read too.
bool has_entry(TransactionId xid) {
    PreparedClaim *entries = snowflake_prepared_claims(snowflake_claims);
    for (uint32_t i = 0; i < snowflake_claims->prepared_count; i++) {
        if (entries[i].xid.load() == xid) {
            return true;
        }
    }
    return false;
}

// Reads the files left by earlier runs: the claims of transactions still prepared are kept, the
// others' files removed. Once per start.
void read_claim_files() {
    snowflake_release_ended_prepared_claims();
    DIR *directory = AllocateDir(kClaimsDirectory);
    if (directory == nullptr) {
        if (errno != ENOENT) {
            ereport(ERROR, (errcode_for_file_access(),
                            errmsg("could not open directory \"%s\": %m", kClaimsDirectory)));
        }
        return;
    }
    struct dirent *entry;
    while ((entry = ReadDir(directory, kClaimsDirectory)) != nullptr) {
        TransactionId xid = InvalidTransactionId;
        if (!xid_of_claim_file(entry->d_name, &xid)) {
            continue;
        }
        const ClaimPath claim_path = claim_file_name(xid);
        const char *path = claim_path.text;
        // A file of an xid not yet assigned comes from another history (a restore to an earlier
        // point): no transaction of this one holds it.
        if (!TransactionIdIsNormal(xid) || !assigned_yet(xid) || !TransactionIdIsInProgress(xid)) {
            (void)unlink(path);
            continue;
        }
        if (has_entry(xid)) {
            continue;
        }
        // An unreadable claim of a transaction still prepared holds every id back.
        keep_in_memory(xid, read_claim_file(path));
    }
    FreeDir(directory);
}

}  // namespace

// Frees the entries of ended transactions: before a PREPARE takes one, so that a server whose
// bound nobody reads never runs out of entries, nor keeps a file per prepared transaction; and
// before the holders are listed.
void snowflake_release_ended_prepared_claims() {
    PreparedClaim *entries = snowflake_prepared_claims(snowflake_claims);
    for (uint32_t i = 0; i < snowflake_claims->prepared_count; i++) {
        (void)release_if_ended(entries[i]);
    }
}

void snowflake_keep_claim_for_prepare(uint64_t lowest) {
    snowflake_release_ended_prepared_claims();
    // Zeroed whole, padding included, since the WAL record carries its bytes.
    ClaimRecord record;
    memset(&record, 0, sizeof(record));
    record.xid = GetTopTransactionId();
    record.lowest = lowest;
    keep_in_memory(record.xid, record.lowest);
    write_claim_file(record, ERROR);
    // The PREPARE's own record follows it in the WAL, and is flushed before the PREPARE returns.
    XLogBeginInsert();
    XLogRegisterData(reinterpret_cast<char *>(&record), sizeof(record));
    (void)XLogInsert(kSnowflakeRmgrId, kXlogClaim);
}

void snowflake_load_prepared_claims() {
    if (!snowflake_claims->files_read.load()) {
        LWLockAcquire(snowflake_claims->files_lock, LW_EXCLUSIVE);
        if (!snowflake_claims->files_read.load()) {
            read_claim_files();
            snowflake_claims->files_read.store(true);
        }
        LWLockRelease(snowflake_claims->files_lock);
    }
}

uint64_t snowflake_prepared_claims_bound() {
    snowflake_load_prepared_claims();
    uint64_t bound = snowflake::kClaimsNothing;
    PreparedClaim *entries = snowflake_prepared_claims(snowflake_claims);
    for (uint32_t i = 0; i < snowflake_claims->prepared_count; i++) {
        const uint64_t lowest = snowflake::claim_of(entries[i].claim);
        // A reader that loses the race to release an ended entry keeps the claim it loaded,
        // which is only lower than need be.
        if (lowest != snowflake::kClaimsNothing && !release_if_ended(entries[i])) {
            bound = std::min(bound, lowest);
        }
    }
    return bound;
}

void snowflake_redo_claim(XLogReaderState *record) {
    ClaimRecord claim{};
    memcpy(&claim, XLogRecGetData(record), Min(XLogRecGetDataLen(record), sizeof(claim)));
    remove_ended_files_in_recovery();
    write_claim_file(claim, ERROR);
}

void snowflake_describe_claim(StringInfo buf, XLogReaderState *record) {
    ClaimRecord claim{};
    memcpy(&claim, XLogRecGetData(record), Min(XLogRecGetDataLen(record), sizeof(claim)));
    appendStringInfo(buf, "xid %u lowest %" PRIu64, claim.xid, claim.lowest);
}
