// The fleet guard: a background worker that checks, every snowflake.fleet_check_interval, every
// server listed in snowflake.fleet (README "Fleet guard"). It asks them all at once, each within
// the time limit, for its node pair, clock and instance token (peer_query.cpp), so that a round
// takes one member's time limit however many never answer; recognises this server by the token
// that the postmaster drew at start (fleet_memory.cpp); and keeps the results in shared memory
// (fleet_shared.hpp) for the SQL functions (fleet_functions.cpp) and for snowflake_nextval()'s
// refusal (fleet_refusal.cpp), and logs what changed (fleet_log.cpp). A live member holding this
// server's pair fences it as soon as its answer comes, mid-round. The worker connects to no
// database, but is attached like a backend, so that pg_stat_activity shows it and its waits.
// The error-boundary rules are stated at the top of module.cpp.

#include <csignal>

extern "C" {
#include "postgres.h"

#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/condition_variable.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

PGDLLEXPORT void snowflake_fleet_guard_main(Datum main_arg);
}

#include "core/codec.hpp"
#include "core/fleet.hpp"
#include "pg/compat.hpp"
#include "pg/fleet/fleet_guard.hpp"
#include "pg/fleet/fleet_log.hpp"
#include "pg/fleet/fleet_shared.hpp"
#include "pg/fleet/peer_query.hpp"
#include "pg/settings.hpp"
#include "pg/shared_state.hpp"

namespace {

// Copies text into a fixed field as printable ASCII on one line: a peer's messages come in its own
// encoding and libpq's span lines, a member string may hold any bytes, the field is shown as text
// in every database, and a cut must not split a character.
void copy_printable(char *field, size_t field_size, const char *text) {
    size_t i = 0;
    for (; i + 1 < field_size && text[i] != '\0'; i++) {
        const auto byte = static_cast<unsigned char>(text[i]);
        const bool space = byte == '\n' || byte == '\r' || byte == '\t';
        field[i] = byte >= 0x20 && byte < 0x7f ? text[i] : space ? ' ' : '?';
    }
    field[i] = '\0';
}

// Publishes a check's results and sets or clears the fence word; a whole round (checked_at not
// 0) is the first one if none has ended before. Wakes whoever waits for the first round.
void publish(const MemberStatus *statuses, int count, TimestampTz checked_at, bool fenced,
             int64_t node_bits, const char *holder) {
    LWLockAcquire(snowflake_fleet_shared->lock, LW_EXCLUSIVE);
    snowflake_fleet_shared->checked_at = checked_at;
    snowflake_fleet_shared->member_count = count;
    if (count > 0) {
        memcpy(snowflake_fleet_shared->members, statuses, sizeof(MemberStatus) * count);
    }
    strlcpy(snowflake_fleet_shared->node_holder, fenced ? holder : "", kMemberTextBytes);
    snowflake_shared->fenced_node_bits.store(fenced ? node_bits : -1, std::memory_order_release);
    if (checked_at != 0) {
        snowflake_fleet_shared->first_check_done.store(true, std::memory_order_release);
    }
    LWLockRelease(snowflake_fleet_shared->lock);
    ConditionVariableBroadcast(&snowflake_fleet_shared->first_check_cv);
}

// What the fence needs to know while a round runs.
struct RoundContext {
    snowflake::ThisServer self;
    bool node_valid;  // a pair that is not set holds nothing, and is never fenced
    int64_t node_bits;
    const MemberStatus *statuses;  // for the member's text
};

// Called as each member answers: one that holds this server's pair fences it at once, before
// the slower members have answered or timed out. Only a whole round lifts the fence (publish).
void fence_on_duplicate(int index, const PeerAnswer &answer, void *context) {
    const auto *round = static_cast<const RoundContext *>(context);
    if (!round->node_valid || !answer.answered ||
        !snowflake::member_holds_this_node(snowflake_member_answer(answer), round->self) ||
        snowflake_shared->fenced_node_bits.load(std::memory_order_relaxed) == round->node_bits) {
        return;
    }
    LWLockAcquire(snowflake_fleet_shared->lock, LW_EXCLUSIVE);
    strlcpy(snowflake_fleet_shared->node_holder, round->statuses[index].member, kMemberTextBytes);
    snowflake_shared->fenced_node_bits.store(round->node_bits, std::memory_order_release);
    LWLockRelease(snowflake_fleet_shared->lock);
    ConditionVariableBroadcast(&snowflake_fleet_shared->first_check_cv);
}

// One check of every member.
void check_fleet() {
    const char *list = snowflake_fleet_setting != nullptr ? snowflake_fleet_setting : "";
    snowflake::FleetSpan spans[snowflake::kMaxFleetMembers];
    const snowflake::FleetSplit split = snowflake::split_fleet_list(list, spans);
    const int count = split.count;
    snowflake_fleet_shared->round_started_at.store(GetCurrentTimestamp(),
                                                   std::memory_order_relaxed);
    auto *questions = static_cast<PeerQuestion *>(palloc0(sizeof(PeerQuestion) * Max(count, 1)));
    auto *members = static_cast<snowflake::MemberAnswer *>(
        palloc0(sizeof(snowflake::MemberAnswer) * Max(count, 1)));
    auto *statuses = static_cast<MemberStatus *>(palloc0(sizeof(MemberStatus) * Max(count, 1)));
    for (int i = 0; i < count; i++) {
        const char *conninfo = pnstrdup(list + spans[i].begin, spans[i].length);
        questions[i].conninfo = conninfo;
        // The setting's check accepted every member, so the string parses.
        const ConninfoFacts facts = snowflake_inspect_conninfo(conninfo);
        copy_printable(statuses[i].member, kMemberTextBytes,
                       facts.parses ? facts.displayable : "(unparsable)");
    }
    const snowflake::ThisServer self{snowflake_fleet_shared->instance_token,
                                     static_cast<int32_t>(snowflake_datacenter_id_setting),
                                     static_cast<int32_t>(snowflake_machine_id_setting)};
    // A pair that is not set holds nothing, so the node is valid whenever the fleet holds it.
    const snowflake::NodeResult node =
        snowflake::make_node(snowflake_datacenter_id_setting, snowflake_machine_id_setting);
    RoundContext round{self, node.status == snowflake::CodecStatus::kOk, node.node.bits, statuses};
    snowflake_ask_peers(questions, count, "snowflake fleet guard", snowflake_member_time_limit_ms(),
                        fence_on_duplicate, &round);
    auto *answers = static_cast<PeerAnswer *>(palloc0(sizeof(PeerAnswer) * Max(count, 1)));
    for (int i = 0; i < count; i++) {
        answers[i] = questions[i].answer;
        members[i] = snowflake_member_answer(answers[i]);
    }
    auto *assessments = static_cast<snowflake::MemberAssessment *>(
        palloc0(sizeof(snowflake::MemberAssessment) * Max(count, 1)));
    snowflake::assess_fleet(members, count, self, snowflake_max_clock_offset_setting, assessments);
    const char *holder = "";
    for (int i = 0; i < count; i++) {
        MemberStatus &status = statuses[i];
        status.self = assessments[i].self;
        status.answered = answers[i].answered;
        status.datacenter_id = members[i].datacenter_id;
        status.machine_id = members[i].machine_id;
        status.clock_offset_ms = answers[i].clock_offset_ms;
        status.problem_bits = assessments[i].problem_bits;
        copy_printable(
            status.problem_words, kProblemWordsBytes,
            snowflake_member_problem_words(assessments[i], answers[i], "snowflake.max_clock_offset",
                                           snowflake_max_clock_offset_setting));
        if ((status.problem_bits & snowflake::kSameNodeAsThisServer) && holder[0] == '\0') {
            holder = status.member;
        }
    }
    const bool fenced = snowflake::fleet_holds_this_node(assessments, count) && round.node_valid;
    publish(statuses, count, GetCurrentTimestamp(), fenced, node.node.bits, holder);
    snowflake_log_fleet_changes(statuses, count, fenced, holder);
}

// With the guard off, nothing is shown and nothing is fenced.
void clear_results() {
    publish(nullptr, 0, 0, false, -1, "");
    snowflake_log_fleet_changes(nullptr, 0, false, "");
}

// Sleeps for the interval (with the guard off, until a reload) and returns early only for a
// reload or a shutdown. The other wake-ups of a process attached like a backend, such as the
// barrier that DROP DATABASE waits for every such process to absorb, are handled at once and
// the sleep goes on, so that they neither wait for the interval nor add checks.
void sleep_until_next_check(bool on) {
    const uint32 wait_event = snowflake_wait_event("SnowflakeFleetSleep");
    const TimestampTz deadline =
        GetCurrentTimestamp() +
        static_cast<int64>(snowflake_fleet_check_interval_setting) * USECS_PER_SEC;
    for (;;) {
        long timeout_ms = -1;
        if (on) {
            timeout_ms = static_cast<long>((deadline - GetCurrentTimestamp() + 999) / 1000);
            if (timeout_ms <= 0) {
                return;
            }
        }
        const int events = WL_LATCH_SET | WL_EXIT_ON_PM_DEATH | (on ? WL_TIMEOUT : 0);
        const int occurred = WaitLatch(MyLatch, events, timeout_ms, wait_event);
        if (occurred & WL_TIMEOUT) {
            return;
        }
        ResetLatch(MyLatch);
        CHECK_FOR_INTERRUPTS();
        if (ConfigReloadPending) {
            return;
        }
    }
}

}  // namespace

void snowflake_register_fleet_guard() {
    BackgroundWorker worker{};
    strlcpy(worker.bgw_name, "snowflake fleet guard", BGW_MAXLEN);
    strlcpy(worker.bgw_type, "snowflake fleet guard", BGW_MAXLEN);
    // Attached like a backend, though to no database, so that pg_stat_activity shows the worker.
    worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
    // A standby generates nothing; the guard starts once the server can generate.
    worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
    worker.bgw_restart_time = 10;
    strlcpy(worker.bgw_library_name, "snowflake", BGW_MAXLEN);
    strlcpy(worker.bgw_function_name, "snowflake_fleet_guard_main", BGW_MAXLEN);
    RegisterBackgroundWorker(&worker);
}

// The worker: checks, then sleeps for the interval; a reload is applied at once, before the next
// check, and a shutdown request ends a check or a sleep at once.
void snowflake_fleet_guard_main(Datum) {
    pqsignal(SIGHUP, SignalHandlerForConfigReload);
    pqsignal(SIGTERM, die);
    // A cancel is ignored, as it was before the worker was attached like a backend: it runs no
    // statement to cancel, and the error would only stop the guard until it is started again.
    // Set directly: pqsignal's handler type differs between versions, and SIG_IGN needs none.
    (void)std::signal(SIGINT, SIG_IGN);
    BackgroundWorkerUnblockSignals();
    // No database: the worker reads no catalog, and holds up no DROP DATABASE.
    BackgroundWorkerInitializeConnection(nullptr, nullptr, 0);
    MemoryContext check_context =
        AllocSetContextCreate(TopMemoryContext, "snowflake fleet guard", ALLOCSET_DEFAULT_SIZES);
    // What a worker that died left stands until this one's first round replaces it: lifting a
    // fence before a whole round would let a live duplicate generate.
    for (;;) {
        CHECK_FOR_INTERRUPTS();
        if (ConfigReloadPending) {
            ConfigReloadPending = false;
            ProcessConfigFile(PGC_SIGHUP);
        }
        const bool on = snowflake_fleet_guard_is_on();
        MemoryContext caller_context = MemoryContextSwitchTo(check_context);
        if (on) {
            check_fleet();
        } else {
            clear_results();
        }
        MemoryContextSwitchTo(caller_context);
        MemoryContextReset(check_context);
        // A reload that came during the check (whose waits take the latch) is applied now.
        if (ConfigReloadPending) {
            continue;
        }
        sleep_until_next_check(on);
    }
}
