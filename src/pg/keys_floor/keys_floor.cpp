// The gate of the floor from stored keys. After a start without a mark file of this data
// directory's history (none at all, one another cluster wrote, or a pg_upgrade run since), the
// highest timestamp this server issued is unknown: before a backend's first id, it waits,
// cancellably, until a background worker has read the stored keys of this server's node pair in
// every database (keys_readers.cpp), and it refuses while a key further ahead than
// snowflake.key_floor_max_lead stops generation. The first call that waits starts the read, so
// that keys restored or replicated into the server before its first id are read too. A file in
// the data directory keeps the floor armed across restarts until one read of every database has
// ended. doc/operations.md "Upgrading PostgreSQL" and "Guarantees" say what it covers and why;
// keys_readers.cpp describes the processes and the locking.

#include <fcntl.h>
#include <unistd.h>

extern "C" {
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"
#include "storage/condition_variable.h"
#include "storage/fd.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/timestamp.h"

PG_FUNCTION_INFO_V1(snowflake_release_key);
}

#include "core/codec.hpp"
#include "core/generator.hpp"
#include "core/key_floor.hpp"
#include "core/mark_rules.hpp"
#include "pg/clock.hpp"
#include "pg/compat.hpp"
#include "pg/mark/mark.hpp"
#include "pg/keys_floor/keys_floor.hpp"
#include "pg/keys_floor/keys_floor_parts.hpp"
#include "pg/settings.hpp"
#include "pg/shared_state.hpp"

namespace {

// Present while the keys of some database may still be above what the generator knows of.
constexpr char kKeysUncheckedFileName[] = "snowflake_keys_unchecked";

// How long a waiting call sleeps before it looks again at the read and at its reader.
constexpr long kWaitSliceMs = 1000;

// The bit of a node pair in KeysFloorState::read_pairs.
struct PairBit {
    size_t word;
    uint64_t mask;
};

PairBit pair_bit(int64 node_bits) {
    const auto pair =
        static_cast<uint64_t>(node_bits >> snowflake::kMachineShift) & (kNodePairCount - 1);
    return {pair / 64, uint64_t{1} << (pair % 64)};
}

// Why a call may not wait for the read: a single-user backend has no background workers.
void refuse_without_postmaster() {
    if (IsUnderPostmaster) {
        return;
    }
    ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                    errmsg("Snowflake ids cannot be generated in single-user mode after a start "
                           "without a mark file of this data directory"),
                    errdetail("No id is issued until a background worker has read the stored "
                              "keys of every database, and single-user mode runs none."),
                    errhint("Start the server normally.")));
}

// A call while a database's read fails: the read goes on being retried, the call says why it
// cannot wait for it.
void refuse_while_read_fails(KeysFloorState &floor) {
    char failure[kReadFailureBytes];
    SpinLockAcquire(&floor.lock);
    strlcpy(failure, floor.read_failure, sizeof(failure));
    SpinLockRelease(&floor.lock);
    if (failure[0] == '\0') {
        return;
    }
    ConditionVariableCancelSleep();
    ereport(ERROR,
            (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
             errmsg("Snowflake id generation waits for the stored keys of this server's node pair "
                    "to be read, and the read failed"),
             errdetail("%s.", failure),
             errhint("Fix the cause the server log gives; the read is retried every %ld s, and "
                     "ids are issued once the keys of every database were read.",
                     kRetryMs / 1000)));
}

// The generator was raised through a key's millisecond, which no mark in the file covers yet:
// snowflake_keys_unchecked stays until one does (snowflake_note_mark_written()), so that a
// restart or a crash before then reads the keys again rather than trust a mark below the key.
void keep_unchecked_until(KeysFloorState &floor, int64 key_ms) {
    int64 until = floor.unchecked_until_ms.load();
    while (until < key_ms && !floor.unchecked_until_ms.compare_exchange_weak(until, key_ms)) {
    }
}

// A key beyond the window that snowflake.key_floor_max_lead now reaches (a superuser raised it
// and reloaded) holds generation back instead, as a key in the window does: the generator is
// raised through it, and calls wait for the clock to pass it.
void take_beyond_key_into_window(SnowflakeShared *shared, int64 key) {
    KeysFloorState &floor = shared->keys_floor;
    int64 held = key;
    if (!floor.beyond_hold.compare_exchange_strong(held, -1)) {
        return;
    }
    const int64 key_ms = snowflake::unix_ms_of_key(key);
    SpinLockAcquire(&floor.lock);
    floor.floor_key = key;
    strlcpy(floor.floor_source, floor.beyond_source, sizeof(floor.floor_source));
    SpinLockRelease(&floor.lock);
    floor.floor_ms.store(key_ms);
    snowflake_raise_generator(shared, key_ms, GeneratorRaise::kLease);
    keep_unchecked_until(floor, key_ms);
    ereport(LOG, (errmsg("snowflake: key %lld is within snowflake.key_floor_max_lead (%d ms) now: "
                         "it holds generation back until the clock passes it",
                         static_cast<long long>(key), snowflake_key_floor_max_lead_setting)));
}

// A key beyond the window stops generation until the clock leaves its millisecond; from then on
// the generator is raised through it, so that a clock that steps back again cannot reach it, and
// the key is let go as if released. A larger snowflake.key_floor_max_lead that reaches it turns
// the stop into a hold.
void refuse_while_beyond_key_stops(SnowflakeShared *shared, snowflake::Node node, int64 key) {
    KeysFloorState &floor = shared->keys_floor;
    if (key < 0 || floor.beyond_hold_node_bits.load() != node.bits) {
        return;
    }
    const int64 now_unix_ms = snowflake_wall_clock_unix_ms();
    // A clock outside the layout passes no key: the call fails as the id would, and changes
    // nothing.
    if (!snowflake::clock_in_layout(now_unix_ms)) {
        snowflake_report_clock_out_of_range(now_unix_ms);
    }
    const int64 key_ms = snowflake::unix_ms_of_key(key);
    if (!snowflake::beyond_key_stops_generation(key, now_unix_ms)) {
        snowflake_raise_generator(shared, key_ms, GeneratorRaise::kLease);
        int64 held = key;
        if (floor.beyond_hold.compare_exchange_strong(held, -1)) {
            keep_unchecked_until(floor, key_ms);
        }
        return;
    }
    if (key_ms - now_unix_ms <= snowflake_key_floor_max_lead_setting) {
        take_beyond_key_into_window(shared, key);
        return;
    }
    char source[kKeySourceBytes];
    SpinLockAcquire(&floor.lock);
    strlcpy(source, floor.beyond_source, sizeof(source));
    const uint64_t keys = floor.beyond_keys;
    const uint32_t columns = floor.beyond_columns;
    SpinLockRelease(&floor.lock);
    char key_time[MAXDATELEN + 1];
    strlcpy(key_time, timestamptz_to_str(snowflake::pg_us_from_unix_ms(key_ms)), sizeof(key_time));
    ereport(ERROR,
            (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
             errmsg("a stored key %lld ms ahead of the clock stops Snowflake id generation",
                    static_cast<long long>(key_ms - now_unix_ms)),
             errdetail("After a start without a mark file of this data directory, ids stay above "
                       "the stored keys of this server's node pair. Keys further ahead than "
                       "snowflake.key_floor_max_lead (%d ms): %llu, in %u columns, which the "
                       "server log names; the highest is key %lld of %s, of %s. A server with "
                       "this node pair whose clock was ever at or past that time issued such "
                       "keys, and an id equal to one would repeat it.",
                       snowflake_key_floor_max_lead_setting, static_cast<unsigned long long>(keys),
                       columns, static_cast<long long>(key), source, key_time),
             errhint("%s", snowflake_beyond_key_advice(key, now_unix_ms))));
}

// The keys a read found are those of the pair it was for: a call with a pair that no read since
// the start was for (a reload set another, or set one where none was) asks for a read of its own.
void request_read_of(SnowflakeShared *shared, snowflake::Node node) {
    KeysFloorState &floor = shared->keys_floor;
    if (floor.pending.load()) {
        return;
    }
    floor.pair_requested.store(node.bits);
    bool pending = false;
    if (floor.pending.compare_exchange_strong(pending, true)) {
        snowflake_keep_keys_unchecked();
        ereport(LOG, (errmsg("snowflake: the stored keys are read for node pair (%lld, %lld), "
                             "which no read since the start was for, before its next id",
                             static_cast<long long>(node.bits >> snowflake::kDatacenterShift) &
                                 snowflake::kMaxDatacenterId,
                             static_cast<long long>(node.bits >> snowflake::kMachineShift) &
                                 snowflake::kMaxMachineId)));
    }
}

// Arms the floor for this start, with the reason the log gives.
void arm(KeysFloorState &floor) {
    snowflake_keep_keys_unchecked();
    floor.armed.store(true, std::memory_order_relaxed);
    floor.pending.store(true, std::memory_order_relaxed);
}

}  // namespace

void snowflake_keep_keys_unchecked() {
    // O_NONBLOCK and O_NOFOLLOW: a FIFO or a link in its place is reported, never waited on.
    const int fd = OpenTransientFile(kKeysUncheckedFileName,
                                     O_WRONLY | O_CREAT | O_NONBLOCK | O_NOFOLLOW | PG_BINARY);
    if (fd < 0 || CloseTransientFile(fd) != 0 ||
        fsync_fname_ext(kKeysUncheckedFileName, false, false, LOG) != 0 ||
        fsync_fname_ext(".", true, false, LOG) != 0) {
        ereport(LOG, (errcode_for_file_access(),
                      errmsg("could not create \"%s\": %m; if the server restarts before the "
                             "keys of every database were read, they are not read again",
                             kKeysUncheckedFileName)));
    }
}

void snowflake_forget_keys_unchecked() {
    if (unlink(kKeysUncheckedFileName) != 0 && errno != ENOENT) {
        ereport(LOG, (errcode_for_file_access(),
                      errmsg("could not remove file \"%s\": %m; the next start reads the keys "
                             "again",
                             kKeysUncheckedFileName)));
        return;
    }
    (void)fsync_fname_ext(".", true, false, LOG);
}

bool snowflake_pair_was_read(const KeysFloorState &floor, int64_t node_bits) {
    const PairBit bit = pair_bit(node_bits);
    return (floor.read_pairs[bit.word].load() & bit.mask) != 0;
}

void snowflake_note_pair_read(KeysFloorState &floor, int64_t node_bits, bool read) {
    const PairBit bit = pair_bit(node_bits);
    if (read) {
        floor.read_pairs[bit.word].fetch_or(bit.mask);
    } else {
        floor.read_pairs[bit.word].fetch_and(~bit.mask);
    }
}

const char *snowflake_beyond_key_advice(int64_t key, int64_t now_unix_ms) {
    const int64 key_ms = snowflake::unix_ms_of_key(key);
    char key_time[MAXDATELEN + 1];
    strlcpy(key_time, timestamptz_to_str(snowflake::pg_us_from_unix_ms(key_ms)), sizeof(key_time));
    // Whole seconds, rounded up, past the lead the key has now.
    const int64 lead_s = (key_ms - now_unix_ms) / 1000 + 1;
    const char *release = psprintf(
        "Release it with SELECT snowflake_release_key(%lld) only if no server with this node pair "
        "issued these keys (written by hand, or copied from a server of another pair): the server "
        "may then issue ids equal to it and to every other key beyond the bound.",
        static_cast<long long>(key));
    if (lead_s * 1000 <= kKeyFloorMaxLeadLimitMs) {
        return psprintf("Did a server with this node pair ever run with its clock at or past %s? "
                        "If it did, or if you do not know, resume without risk: set "
                        "snowflake.key_floor_max_lead to '%llds' or more (ALTER SYSTEM, then "
                        "SELECT pg_reload_conf()), and generation waits for the clock to pass the "
                        "key; or wait until %s. If this server's clock is behind, fix it. %s",
                        key_time, static_cast<long long>(lead_s), key_time, release);
    }
    return psprintf("Did a server with this node pair ever run with its clock at or past %s? If "
                    "it did, or if you do not know, resume without risk: wait until %s, which "
                    "is further ahead than snowflake.key_floor_max_lead can reach. If this "
                    "server's clock is behind, fix it. %s",
                    key_time, key_time, release);
}

void snowflake_arm_keys_floor(SnowflakeShared *shared, KeysFloorStart start) {
    KeysFloorState &floor = shared->keys_floor;
    switch (start) {
        case KeysFloorStart::kBinaryUpgrade:
            // pg_upgrade's runs of either cluster read nothing: the new one's tables are not there
            // yet. Whatever mark file the next start finds was not written beside these tables.
            snowflake_keep_keys_unchecked();
            ereport(LOG, (errmsg("snowflake: started by pg_upgrade; the next start reads the "
                                 "stored keys of every database before its first id, whatever "
                                 "mark file it finds")));
            return;
        case KeysFloorStart::kMarkMissing:
            arm(floor);
            ereport(LOG,
                    (errmsg("snowflake mark file \"%s\" not found", kMarkFileName),
                     errdetail("This is expected at the first start of a new data directory. "
                               "After pg_upgrade, a restore without the file or its removal, the "
                               "highest id this server issued is unknown: no id is issued until "
                               "a background worker has read the stored keys of this server's "
                               "node pair in every database, which the first call starts, after "
                               "this start and every next one until one read of them all has "
                               "ended.")));
            return;
        case KeysFloorStart::kMarkForeign:
            arm(floor);
            ereport(LOG, (errmsg("snowflake: no id is issued until the stored keys of every "
                                 "database were read, since the mark file names another cluster "
                                 "or none")));
            return;
        case KeysFloorStart::kMarkTrusted:
            if (access(kKeysUncheckedFileName, F_OK) == 0) {
                arm(floor);
                ereport(LOG, (errmsg("snowflake: \"%s\" is present: no id is issued until the "
                                     "stored keys of every database were read, since no read of "
                                     "them all has ended since the mark file was lost, foreign or "
                                     "written before a pg_upgrade",
                                     kKeysUncheckedFileName)));
            }
            return;
    }
}

void snowflake_await_keys_floor(SnowflakeShared *shared, snowflake::Node node) {
    KeysFloorState &floor = shared->keys_floor;
    if (!floor.armed.load()) {
        // The mark speaks for the ids of one pair: another's stored keys were never read.
        if (node.bits == shared->mark_node_bits.load()) {
            return;
        }
        floor.armed.store(true);
    }
    bool waited = false;
    int64 hold = -1;
    for (;;) {
        if (!floor.pending.load() && snowflake_pair_was_read(floor, node.bits)) {
            // A read for another pair that begins now drops the hold and marks this pair unread
            // (keys_readers.cpp, start_read()). The hold is loaded between two checks, so that a
            // hold dropped under this call is seen by the second one, and the call waits again.
            hold = floor.beyond_hold.load();
            if (!floor.pending.load() && snowflake_pair_was_read(floor, node.bits)) {
                break;
            }
        }
        if (!floor.pending.load() && !snowflake_pair_was_read(floor, node.bits)) {
            request_read_of(shared, node);
        }
        refuse_without_postmaster();
        snowflake_request_keys_reader(shared);
        refuse_while_read_fails(floor);
        (void)ConditionVariableTimedSleep(&floor.changed, kWaitSliceMs,
                                          snowflake_wait_event("SnowflakeKeysRead"));
        waited = true;
    }
    if (waited) {
        ConditionVariableCancelSleep();
    }
    refuse_while_beyond_key_stops(shared, node, hold);
}

void snowflake_keys_floor_rearm_at_stop(SnowflakeShared *shared) {
    KeysFloorState &floor = shared->keys_floor;
    const int64 floor_ms = floor.floor_ms.load();
    const snowflake::LastIssued last = snowflake::last_issued(shared->generator);
    const bool held_by_key = floor_ms != 0 && last.any && last.unix_ms == floor_ms;
    if (held_by_key || floor.beyond_hold.load() >= 0 || floor.pending.load() ||
        floor.hold_dropped.load() || floor.unchecked_until_ms.load() != 0) {
        snowflake_keep_keys_unchecked();
    }
}

void snowflake_note_mark_written(SnowflakeShared *shared, int64_t mark_ms) {
    KeysFloorState &floor = shared->keys_floor;
    int64 until = floor.unchecked_until_ms.load();
    if (until == 0 || mark_ms < until ||
        !floor.unchecked_until_ms.compare_exchange_strong(until, 0)) {
        return;
    }
    if (!floor.pending.load() && floor.beyond_hold.load() < 0 && !floor.hold_dropped.load()) {
        snowflake_forget_keys_unchecked();
    }
}

void snowflake_describe_key_floor(const SnowflakeShared *shared, int64 *key, char *source,
                                  size_t source_size) {
    KeysFloorState &floor = const_cast<SnowflakeShared *>(shared)->keys_floor;
    SpinLockAcquire(&floor.lock);
    *key = floor.floor_key;
    strlcpy(source, floor.floor_source, source_size);
    SpinLockRelease(&floor.lock);
}

// A superuser's way to resume generation that a key beyond the window stops, for keys that no
// server with this pair issued: the release is logged with who released which key, and what else
// it gives up.
Datum snowflake_release_key(PG_FUNCTION_ARGS) {
    SnowflakeShared *shared = snowflake_shared;
    if (shared == nullptr) {
        snowflake_report_not_preloaded("The keys that stop generation are kept in shared memory.");
    }
    KeysFloorState &floor = shared->keys_floor;
    const int64 key = PG_GETARG_INT64(0);
    int64 held = floor.beyond_hold.load();
    if (key < 0 || held != key || !floor.beyond_hold.compare_exchange_strong(held, -1)) {
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("key %lld does not stop Snowflake id generation",
                               static_cast<long long>(key)),
                        held >= 0 ? errdetail("Key %lld does.", static_cast<long long>(held))
                                  : errdetail("No stored key stops generation."),
                        errhint("Release the key that the refusal of snowflake_nextval() "
                                "names.")));
    }
    char source[kKeySourceBytes];
    SpinLockAcquire(&floor.lock);
    strlcpy(source, floor.beyond_source, sizeof(source));
    const uint64_t keys = floor.beyond_keys;
    const uint32_t columns = floor.beyond_columns;
    SpinLockRelease(&floor.lock);
    // The keys within the window that the read raised the generator above stay covered by it.
    if (floor.unchecked_until_ms.load() == 0) {
        snowflake_forget_keys_unchecked();
    }
    ereport(LOG,
            (errmsg("snowflake: key %lld of %s was released by role \"%s\" (session user \"%s\"); "
                    "it no longer stops generation",
                    static_cast<long long>(key), source, GetUserNameFromId(GetUserId(), false),
                    GetUserNameFromId(GetSessionUserId(), false)),
             errdetail("This server issues an id equal to it when its clock reaches %s, unless "
                       "the row has another key by then; so does it for each key beyond "
                       "snowflake.key_floor_max_lead that the read found (%llu, in %u columns, "
                       "this one among them).",
                       timestamptz_to_str(
                           snowflake::pg_us_from_unix_ms(snowflake::unix_ms_of_key(key))),
                       static_cast<unsigned long long>(keys), columns)));
    PG_RETURN_VOID();
}
