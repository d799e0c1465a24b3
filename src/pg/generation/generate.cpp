// SQL entry points that use the shared generator: snowflake_nextval() and snowflake_info().
// The error-boundary and concurrency rules are stated at the top of module.cpp.

#include <ctime>
#include <sys/prctl.h>

extern "C" {
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xlog.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/latch.h"
#include "utils/datetime.h"
#include "utils/timestamp.h"

PG_FUNCTION_INFO_V1(snowflake_nextval);
PG_FUNCTION_INFO_V1(snowflake_info);
}

#include "core/codec.hpp"
#include "core/generator.hpp"
#include "core/layout.hpp"
#include "core/wait.hpp"
#include "pg/clock.hpp"
#include "pg/mark/mark.hpp"
#include "pg/fleet/fleet_refusal.hpp"
#include "pg/keys_floor/keys_floor.hpp"
#include "pg/generation/generation.hpp"
#include "pg/settled/settled.hpp"
#include "pg/settings.hpp"
#include "pg/shared_state.hpp"

namespace {

// Only a preloaded library has the shared generator; anything else gets the line to add.
SnowflakeShared *require_shared_state() {
    if (snowflake_shared == nullptr) {
        snowflake_report_not_preloaded(
            "The id generator keeps its state in shared memory, which only a preloaded library can "
            "create.");
    }
    return snowflake_shared;
}

// An unset node id would make ids that collide with any other server's; refuse until it is set.
// A value the configuration gave but the server rejected at start is named, since the log line
// that said so is easy to miss.
void require_setting(const char *name, int value) {
    if (value >= 0) {
        return;
    }
    const char *rejected = snowflake_rejected_setting_value(name);
    ereport(ERROR,
            (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE), errmsg("%s is not set", name),
             rejected != nullptr
                 ? errdetail("At server start the configuration set it to \"%s\", which was "
                             "rejected: it must be an integer from 0 to 31.",
                             rejected)
                 : errdetail("A value outside 0 to 31, or a misspelt snowflake.* line, in the "
                             "configuration leaves it unset; the server log says so at start."),
             errhint("Set %s to a value from 0 to 31, unique to this server, in "
                     "postgresql.conf or with ALTER SYSTEM, then reload the configuration.",
                     name)));
}

// Whether this backend passed the checks before its first id; an error in them leaves it false,
// so the next call checks again, and so does a change of the node ids.
bool first_id_checked = false;

// The node bits from the settings as this backend sees them now (a reload may change them),
// encoded again only when they change, so that the per-id path compares two integers.
snowflake::Node configured_node() {
    // An impossible pair, so that the first call checks and encodes whatever is set.
    static int encoded_datacenter_id = INT_MIN;
    static int encoded_machine_id = INT_MIN;
    static snowflake::Node encoded_node{};
    if (snowflake_datacenter_id_setting != encoded_datacenter_id ||
        snowflake_machine_id_setting != encoded_machine_id) {
        require_setting("snowflake.datacenter_id", snowflake_datacenter_id_setting);
        require_setting("snowflake.machine_id", snowflake_machine_id_setting);
        // The GUC ranges already hold the ids to 0..31, so the node is always valid here.
        encoded_node =
            snowflake::make_node(snowflake_datacenter_id_setting, snowflake_machine_id_setting)
                .node;
        encoded_datacenter_id = snowflake_datacenter_id_setting;
        encoded_machine_id = snowflake_machine_id_setting;
        first_id_checked = false;
    }
    return encoded_node;
}

// A standby usually carries its primary's node ids, so its ids would collide with the primary's.
void refuse_during_recovery() {
    if (RecoveryInProgress()) {
        ereport(ERROR,
                (errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
                 errmsg("cannot generate Snowflake ids during recovery"),
                 errdetail("A standby shares its primary's node ids; ids made here could collide."),
                 errhint("Call snowflake_nextval() on the primary.")));
    }
}

// Monotonic microseconds, for deadlines that a step of the wall clock cannot stretch.
int64 monotonic_clock_us() {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return static_cast<int64>(now.tv_sec) * 1000000 + now.tv_nsec / 1000;
}

// Sleeps to an absolute monotonic deadline; a signal (a cancel) ends the sleep early. The first
// wait of a backend asks for a timer slack of 1 µs for the rest of its life: the default 50 µs
// would make every wake-up that much later than the boundary it waits for, and the backend's
// other timed waits are few and long enough for the precision to cost nothing.
void sleep_for_us(int64 sleep_us) {
    static bool timer_slack_set = false;
    if (!timer_slack_set) {
#ifdef PR_SET_TIMERSLACK
        (void)prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
#endif
        timer_slack_set = true;
    }
    const int64 deadline_us = monotonic_clock_us() + sleep_us;
    struct timespec deadline;
    deadline.tv_sec = deadline_us / 1000000;
    deadline.tv_nsec = (deadline_us % 1000000) * 1000;
    (void)clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &deadline, nullptr);
}

// Waits until the clock leaves the exhausted millisecond in either direction, so that the
// generator decides what a clock step means; one waiter watches the boundary, the rest sleep
// through it (core/wait.hpp).
void wait_for_clock_to_leave(SnowflakeShared *shared, int64 exhausted_unix_ms) {
    const bool watcher = snowflake::claim_boundary_watch(shared->boundary_watch, exhausted_unix_ms);
    for (;;) {
        const int64 now_us = snowflake_wall_clock_unix_us();
        if (now_us / 1000 != exhausted_unix_ms) {
            return;
        }
        const int64 sleep_us = snowflake::sleep_before_next_ms_us(now_us, watcher);
        if (sleep_us > 0) {
            sleep_for_us(sleep_us);
        }
        CHECK_FOR_INTERRUPTS();
    }
}

// After a start without a mark file of this data directory, a stored key of this server's pair
// ahead of the clock raised the generator (keys_floor.cpp), and nothing was issued since: the
// clock did not move, the key did. The refusal says which key, and that waiting is the way out.
[[noreturn]] void report_held_by_stored_key(const SnowflakeShared *shared, int64 key_floor_ms,
                                            int64 now_unix_ms) {
    int64 key = -1;
    char source[kKeySourceBytes];
    snowflake_describe_key_floor(shared, &key, source, sizeof(source));
    char until_text[MAXDATELEN + 1];
    strlcpy(until_text, timestamptz_to_str(snowflake::pg_us_from_unix_ms(key_floor_ms)),
            sizeof(until_text));
    ereport(
        ERROR,
        (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
         errmsg("a stored key holds Snowflake id generation back until %s", until_text),
         errdetail("After a start without a mark file of this data directory, ids stay above "
                   "the stored keys of this server's node pair; key %lld of %s is %lld ms ahead "
                   "of the clock. A server with this node pair whose clock was that far ahead "
                   "issued it, and an id equal to it would repeat it.",
                   static_cast<long long>(key), source,
                   static_cast<long long>(key_floor_ms - now_unix_ms)),
         errhint("Generation resumes by itself at %s. If this server's clock is behind, fix it "
                 "(doc/operations.md \"Upgrading PostgreSQL\").",
                 until_text)));
    pg_unreachable();
}

// Either refuses at once (the state stays as it is) or sleeps on the latch so a cancel or
// statement_timeout ends the wait. The rest of a lease restored at start-up is always waited out.
void wait_or_refuse_clock_behind(SnowflakeShared *shared, int64 last_unix_ms, int64 now_unix_ms,
                                 bool *counted_clock_rollback) {
    const int64 gap_ms = last_unix_ms - now_unix_ms;
    const snowflake::ClockBehindAction action = snowflake::clock_behind_action(
        last_unix_ms, now_unix_ms, snowflake_max_clock_rollback_wait_setting,
        shared->lease_floor_ms.load(std::memory_order_relaxed));
    if (action != snowflake::ClockBehindAction::kWaitRestOfLease && !*counted_clock_rollback) {
        shared->clock_rollbacks.fetch_add(1, std::memory_order_relaxed);
        *counted_clock_rollback = true;
    }
    if (action == snowflake::ClockBehindAction::kRefuse &&
        last_unix_ms == shared->keys_floor.floor_ms.load(std::memory_order_relaxed)) {
        report_held_by_stored_key(shared, last_unix_ms, now_unix_ms);
    }
    if (action == snowflake::ClockBehindAction::kRefuse) {
        char last_text[MAXDATELEN + 1];
        char now_text[MAXDATELEN + 1];
        strlcpy(last_text, timestamptz_to_str(snowflake::pg_us_from_unix_ms(last_unix_ms)),
                sizeof(last_text));
        strlcpy(now_text, timestamptz_to_str(snowflake::pg_us_from_unix_ms(now_unix_ms)),
                sizeof(now_text));
        ereport(ERROR,
                (errcode(ERRCODE_SYSTEM_ERROR),
                 errmsg("clock moved backwards by %lld ms, refusing to generate Snowflake ids",
                        static_cast<long long>(gap_ms)),
                 errdetail("The clock reads %s but ids were already issued, a settled bound "
                           "read or the server started from its durable mark, up to %s; "
                           "generation is refused until the clock reaches %s (gap %lld ms, "
                           "snowflake.max_clock_rollback_wait is %d ms).",
                           now_text, last_text, last_text, static_cast<long long>(gap_ms),
                           snowflake_max_clock_rollback_wait_setting),
                 gap_ms <= kMaxClockRollbackWaitLimitMs
                     ? errhint("Fix the system clock, or raise snowflake.max_clock_rollback_wait "
                               "to wait out steps back of this size.")
                     : errhint("Fix the system clock. A step back this large cannot be waited "
                               "out (snowflake.max_clock_rollback_wait is at most %d ms); "
                               "generation resumes by itself when the clock reaches %s.",
                               kMaxClockRollbackWaitLimitMs, last_text)));
    }
    (void)WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
                    static_cast<long>(gap_ms), PG_WAIT_EXTENSION);
    ResetLatch(MyLatch);
    CHECK_FOR_INTERRUPTS();
}

// The generator word as this backend last saw it (core/generator.hpp, SeenWord).
snowflake::SeenWord seen_word;

// Once per backend: the floor from keys after a start without a mark file (keys_floor.cpp) and
// the warning of a restored copy (restored_copy.cpp).
void check_before_first_id(SnowflakeShared *shared, snowflake::Node node) {
    snowflake_await_keys_floor(shared, node);
    snowflake_warn_if_restored_copy(shared);
    first_id_checked = true;
}

// Extends the mark for an id; a mark that covers what the floor from stored keys raised the
// generator through lets the floor disarm (keys_floor.cpp).
void extend_mark(SnowflakeShared *shared, int64 now_unix_ms, int64 node_bits, bool wait) {
    snowflake_extend_durable_mark(shared, now_unix_ms, node_bits, wait, ERROR);
    snowflake_note_mark_written(shared, shared->logged_mark_ms.load(std::memory_order_acquire));
}

}  // namespace

// The one generator of the instance: every backend and parallel worker draws from shared memory.
Datum snowflake_nextval(PG_FUNCTION_ARGS) {
    PG_RETURN_INT64(snowflake_draw_id());
}

// One id for the calling transaction, claimed for the settled bound, as snowflake_nextval() gives
// it; the stamps of tracked tables draw theirs here too.
int64 snowflake_draw_id() {
    SnowflakeShared *shared = require_shared_state();
    refuse_during_recovery();
    const snowflake::Node node = configured_node();
    if (snowflake_node_refused(shared, node.bits)) {
        snowflake_report_node_held(snowflake_datacenter_id_setting, snowflake_machine_id_setting);
    }
    snowflake_require_usable_mark(shared);
    if (!first_id_checked) {
        check_before_first_id(shared, node);
    }
    bool counted_sequence_wait = false;
    bool counted_clock_rollback = false;
    for (;;) {
        const int64 mark = shared->durable_mark_ms.load(std::memory_order_acquire);
        // A transaction's first id claims first, for the settled bound (settled.cpp).
        snowflake::ClaimSlot *claim = snowflake_unclaimed_slot();
        const snowflake::NextResult next =
            claim != nullptr ? snowflake::next_id_claimed(shared->generator, node, mark, seen_word,
                                                          *claim, snowflake_wall_clock_unix_ms)
                             : snowflake::next_id(shared->generator, node, mark, seen_word,
                                                  snowflake_wall_clock_unix_ms);
        switch (next.status) {
            case snowflake::NextStatus::kIssued:
                snowflake_count_issued_id(shared);
                if (snowflake::lease_needs_extension(next.now_unix_ms, mark)) {
                    extend_mark(shared, next.now_unix_ms, node.bits, false);
                }
                return next.id;
            case snowflake::NextStatus::kPastIssueLimit:
                extend_mark(shared, next.now_unix_ms, node.bits, true);
                break;
            case snowflake::NextStatus::kSequenceExhausted:
                if (!counted_sequence_wait) {
                    shared->sequence_waits.fetch_add(1, std::memory_order_relaxed);
                    counted_sequence_wait = true;
                }
                wait_for_clock_to_leave(shared, next.now_unix_ms);
                break;
            case snowflake::NextStatus::kClockBehind:
                wait_or_refuse_clock_behind(shared, next.last_unix_ms, next.now_unix_ms,
                                            &counted_clock_rollback);
                break;
            case snowflake::NextStatus::kClockOutOfRange:
                snowflake_report_clock_out_of_range(next.now_unix_ms);
        }
    }
}

// Introspection that also works without preloading, showing the settings and an empty state.
Datum snowflake_info(PG_FUNCTION_ARGS) {
    TupleDesc tupdesc;
    if (get_call_result_type(fcinfo, nullptr, &tupdesc) != TYPEFUNC_COMPOSITE) {
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("snowflake_info() must return a composite type")));
    }
    tupdesc = BlessTupleDesc(tupdesc);

    // One value per column of the snowflake_info type, in its order; without shared memory the
    // state columns are empty. The type of 1.9 and before has the first eight.
    constexpr int kInfoColumnCount = 10;
    const SnowflakeShared *shared = snowflake_shared;
    snowflake::LastIssued last{};
    int64 issued = 0;
    int64 sequence_waits = 0;
    int64 clock_rollbacks = 0;
    int64 mark = 0;
    bool nothing_issued = true;
    if (shared != nullptr) {
        last = snowflake::last_issued(shared->generator);
        // While the last timestamp is still the mark the state was raised to, nothing was issued.
        nothing_issued =
            !last.any || last.unix_ms == shared->lease_floor_ms.load(std::memory_order_relaxed);
        issued = static_cast<int64>(snowflake_total_issued_ids(shared));
        sequence_waits = static_cast<int64>(shared->sequence_waits.load(std::memory_order_relaxed));
        clock_rollbacks =
            static_cast<int64>(shared->clock_rollbacks.load(std::memory_order_relaxed));
        mark = shared->durable_mark_ms.load(std::memory_order_acquire);
    }
    Datum values[kInfoColumnCount];
    bool nulls[kInfoColumnCount];
    int i = 0;
    values[i] = Int32GetDatum(snowflake_datacenter_id_setting);
    nulls[i++] = snowflake_datacenter_id_setting < 0;
    values[i] = Int32GetDatum(snowflake_machine_id_setting);
    nulls[i++] = snowflake_machine_id_setting < 0;
    values[i] = TimestampTzGetDatum(snowflake::pg_us_from_unix_ms(snowflake::kEpochUnixMs));
    nulls[i++] = false;
    values[i] = TimestampTzGetDatum(snowflake::pg_us_from_unix_ms(last.unix_ms));
    nulls[i++] = nothing_issued;
    values[i] = Int64GetDatum(issued);
    nulls[i++] = false;
    values[i] = Int64GetDatum(sequence_waits);
    nulls[i++] = false;
    values[i] = Int64GetDatum(clock_rollbacks);
    nulls[i++] = false;
    values[i] = TimestampTzGetDatum(snowflake::pg_us_from_unix_ms(mark));
    nulls[i++] = mark < snowflake::kEpochUnixMs;
    // The settled bound, and its age: how far its time is behind the clock while a transaction
    // holds it back, zero while none does. NULL on a standby. A type of 1.9 or before takes the
    // first eight values only.
    SettledBound settled{};
    const bool has_bound = snowflake_peek_settled_bound(&settled);
    values[i] = Int64GetDatum(settled.bound);
    nulls[i++] = !has_bound;
    auto *age = static_cast<Interval *>(palloc0(sizeof(Interval)));
    if (settled.held) {
        age->time =
            (snowflake_wall_clock_unix_ms() - snowflake::decode(settled.bound).parts.unix_ms) *
            1000;
    }
    values[i] = IntervalPGetDatum(age);
    nulls[i++] = !has_bound;
    Assert(i == kInfoColumnCount);
    PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}
