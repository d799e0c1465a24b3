// The durable mark at start-up (mark.hpp): the file is read, checked and adopted before
// any other process exists, and a file that cannot be used makes every call refuse until an
// operator acts. The rules of start-up are in doc/design.md "Start-up, in order".

#include <cerrno>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

extern "C" {
#include "postgres.h"

#include "access/xlog.h"
#include "miscadmin.h"
#include "storage/fd.h"
}

#include "core/mark_file.hpp"
#include "pg/mark/mark.hpp"
#include "pg/mark/mark_parts.hpp"
#include "pg/shared_state.hpp"

namespace {

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

}  // namespace

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
    // A version 2 file's "none" stands for no pair, and so does a version 1 file.
    snowflake_adopt_restored_mark(shared, parsed.mark_unix_ms, parsed.node_bits);
    // A version 1 file names no cluster: a release before 1.10 wrote it, here or anywhere (the
    // upgrade notes of 1.8 had operators copy it), so it is only a lower bound (1.11).
    if (parsed.system_identifier == 0) {
        ereport(LOG, (errmsg("snowflake mark file \"%s\" is of the first format, which names no "
                             "cluster",
                             kMarkFileName),
                      errdetail("Its mark is kept as a lower bound, but it cannot stand for the "
                                "ids of this data directory's history: a release before 1.10 "
                                "wrote it, here or in another cluster.")));
        return MarkRestore::kForeign;
    }
    const uint64 own_system = GetSystemIdentifier();
    if (parsed.system_identifier != own_system) {
        ereport(LOG,
                (errmsg("snowflake mark file \"%s\" was written by another cluster", kMarkFileName),
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
