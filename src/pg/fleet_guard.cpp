// The fleet guard: a background worker that checks, every snowflake.fleet_check_interval, every
// server listed in snowflake.fleet (README "Fleet guard"). It asks them all at once, each within
// the time limit, for its node pair, clock and instance token (peer_query.cpp), so that a round
// takes one member's time limit however many never answer; recognises this server by the token
// that the postmaster drew at start, which a clone or a restored backup therefore does not share;
// and keeps the results in shared memory for snowflake_fleet_status() and
// snowflake_fleet_summary(). With snowflake.on_duplicate_node = refuse, a live member holding this
// server's pair makes snowflake_nextval() refuse from the moment its answer comes, mid-round,
// until a whole round no longer finds it; and a newly started server issues no id before its
// first round has ended (snowflake_wait_for_first_fleet_check). No other problem ever stops
// generation.
//
// Concurrency. Only the worker writes the results, under the "snowflake fleet" LWLock, which the
// SQL functions take shared; snowflake_nextval() reads only the fence word (fenced_node_bits in
// SnowflakeShared), with no lock. The word says which pair a live duplicate holds, whatever
// snowflake.on_duplicate_node says; each backend decides by its own value of that setting, so
// that a reload from one mode to the other takes effect at once. The worker never holds the lock
// while it connects; it sets first_check_done once, after its first whole round since the
// server started, and wakes the backends that wait for it through first_check_cv. A worker that
// dies and is started again leaves all of it as the last round (or the fence, mid-round) set it.
// Problems are logged when they appear, change or clear, not at every check: the worker keeps what
// it last logged in its own memory, so a restarted worker logs the standing ones once more. The
// error-boundary rules are stated at the top of module.cpp.

#include <cinttypes>

extern "C" {
#include "postgres.h"

#include "access/htup_details.h"
#include "fmgr.h"
#include "funcapi.h"
#include "nodes/execnodes.h"
#include "lib/stringinfo.h"
#include "libpq-fe.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/condition_variable.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

PG_FUNCTION_INFO_V1(snowflake_fleet_status);
PG_FUNCTION_INFO_V1(snowflake_fleet_summary);
PGDLLEXPORT void snowflake_fleet_guard_main(Datum main_arg);
}

#include <new>

#include "core/codec.hpp"
#include "core/fleet.hpp"
#include "pg/fleet_guard.hpp"
#include "pg/peer_query.hpp"
#include "pg/settings.hpp"
#include "pg/shared_state.hpp"

namespace {

// Room for a member's connection string (passwords masked) and its problems; longer text is cut.
constexpr size_t kMemberTextBytes = 256;
constexpr size_t kProblemTextBytes = 512;
// The longest a member may take to answer, unless the interval is shorter.
constexpr int kMemberTimeoutMs = 5000;
// What a round may take beyond its members' time limit (the worker's own start, starting the
// connections, the assessment) before a backend that waits for the first one gives up.
constexpr int kRoundOverheadMs = 1000;

// One member as the last check found it.
struct MemberStatus {
    char member[kMemberTextBytes];
    bool self;
    bool answered;
    int32_t datacenter_id;  // -1: not set, not loaded, or no answer
    int32_t machine_id;
    int64_t clock_offset_ms;
    uint32_t problems;  // snowflake::MemberProblem bits
    char problem[kProblemTextBytes];
};

struct FleetShared {
    LWLock *lock;
    uint64_t instance_token;
    // Set once, when the first round since the server started has ended; never cleared.
    std::atomic<bool> first_check_done;
    // When the worker began its latest round, or 0.
    std::atomic<int64_t> round_started_at;
    // Broadcast at every publication: a backend waits on it for the first round.
    ConditionVariable first_check_cv;
    // The rest under lock. checked_at is 0 until a check completes, and again when the guard is
    // turned off.
    TimestampTz checked_at;
    int member_count;
    char node_holder[kMemberTextBytes];  // the member holding this server's pair, if any
    MemberStatus members[snowflake::kMaxFleetMembers];
};

FleetShared *fleet_shared = nullptr;

// What the worker last logged for each member, by the member's text.
struct LoggedProblem {
    char member[kMemberTextBytes];
    uint32_t problems;
};
LoggedProblem logged_problems[snowflake::kMaxFleetMembers];
int logged_count = 0;
bool logged_fence = false;

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

// Logs what changed since the last check: a member's problems appearing, changing or clearing,
// a member with problems leaving the list, and the fence going up or down.
void log_changes(const MemberStatus *statuses, int count, bool fenced, const char *holder) {
    for (int i = 0; i < count; i++) {
        const MemberStatus &status = statuses[i];
        uint32_t before = 0;
        for (int l = 0; l < logged_count; l++) {
            if (strcmp(logged_problems[l].member, status.member) == 0) {
                before = logged_problems[l].problems;
            }
        }
        if (status.problems == before) {
            continue;
        }
        if (status.problems != 0) {
            ereport(WARNING, (errmsg("snowflake fleet guard: member %d (%s): %s", i + 1,
                                     status.member, status.problem)));
        } else {
            ereport(LOG, (errmsg("snowflake fleet guard: member %d (%s): no problem any more",
                                 i + 1, status.member)));
        }
    }
    for (int l = 0; l < logged_count; l++) {
        bool listed = false;
        for (int i = 0; i < count && !listed; i++) {
            listed = strcmp(logged_problems[l].member, statuses[i].member) == 0;
        }
        if (!listed && logged_problems[l].problems != 0) {
            ereport(LOG, (errmsg("snowflake fleet guard: %s is no longer checked",
                                 logged_problems[l].member)));
        }
    }
    for (int i = 0; i < count; i++) {
        strlcpy(logged_problems[i].member, statuses[i].member, kMemberTextBytes);
        logged_problems[i].problems = statuses[i].problems;
    }
    logged_count = count;
    if (fenced != logged_fence) {
        if (fenced) {
            ereport(
                WARNING,
                (errmsg("snowflake fleet guard: member %s holds this server's node pair", holder),
                 snowflake_on_duplicate_node_setting == kFleetDuplicateRefuse
                     ? errdetail("snowflake.on_duplicate_node is refuse: this server "
                                 "generates no ids while that member is up.")
                     : errdetail("snowflake.on_duplicate_node is warn: both servers go on "
                                 "generating, and their ids can collide."),
                 errhint("Give one of the two servers another node pair, or stop the one "
                         "that should not generate.")));
        } else {
            ereport(LOG, (errmsg("snowflake fleet guard: no other member holds this server's "
                                 "node pair any more")));
        }
        logged_fence = fenced;
    }
}

// Publishes a check's results and sets or clears the fence word; a whole round (checked_at not
// 0) is the first one if none has ended before. Wakes whoever waits for the first round.
void publish(const MemberStatus *statuses, int count, TimestampTz checked_at, bool fenced,
             int64_t node_bits, const char *holder) {
    LWLockAcquire(fleet_shared->lock, LW_EXCLUSIVE);
    fleet_shared->checked_at = checked_at;
    fleet_shared->member_count = count;
    if (count > 0) {
        memcpy(fleet_shared->members, statuses, sizeof(MemberStatus) * count);
    }
    strlcpy(fleet_shared->node_holder, fenced ? holder : "", kMemberTextBytes);
    snowflake_shared->fenced_node_bits.store(fenced ? node_bits : -1, std::memory_order_release);
    if (checked_at != 0) {
        fleet_shared->first_check_done.store(true, std::memory_order_release);
    }
    LWLockRelease(fleet_shared->lock);
    ConditionVariableBroadcast(&fleet_shared->first_check_cv);
}

// The longest the worker waits for one member's answer.
int member_time_limit_ms() {
    return Min(kMemberTimeoutMs, snowflake_fleet_check_interval_setting * 1000);
}

// Whether this process's settings turn the guard on.
bool guard_is_on() {
    return snowflake_fleet_check_interval_setting > 0 && snowflake_fleet_setting != nullptr &&
           snowflake_fleet_setting[0] != '\0';
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
    LWLockAcquire(fleet_shared->lock, LW_EXCLUSIVE);
    strlcpy(fleet_shared->node_holder, round->statuses[index].member, kMemberTextBytes);
    snowflake_shared->fenced_node_bits.store(round->node_bits, std::memory_order_release);
    LWLockRelease(fleet_shared->lock);
    ConditionVariableBroadcast(&fleet_shared->first_check_cv);
}

// One check of every member.
void check_fleet() {
    const char *list = snowflake_fleet_setting != nullptr ? snowflake_fleet_setting : "";
    snowflake::FleetSpan spans[snowflake::kMaxFleetMembers];
    const snowflake::FleetSplit split = snowflake::split_fleet_list(list, spans);
    const int count = split.count;
    fleet_shared->round_started_at.store(GetCurrentTimestamp(), std::memory_order_relaxed);
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
    const snowflake::ThisServer self{fleet_shared->instance_token,
                                     static_cast<int32_t>(snowflake_datacenter_id_setting),
                                     static_cast<int32_t>(snowflake_machine_id_setting)};
    // A pair that is not set holds nothing, so the node is valid whenever the fleet holds it.
    const snowflake::NodeResult node =
        snowflake::make_node(snowflake_datacenter_id_setting, snowflake_machine_id_setting);
    RoundContext round{self, node.status == snowflake::CodecStatus::kOk, node.node.bits, statuses};
    snowflake_ask_peers(questions, count, "snowflake fleet guard", member_time_limit_ms(),
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
        status.problems = assessments[i].problems;
        copy_printable(
            status.problem, kProblemTextBytes,
            snowflake_member_problem_text(assessments[i], answers[i], "snowflake.max_clock_offset",
                                          snowflake_max_clock_offset_setting));
        if ((status.problems & snowflake::kSameNodeAsThisServer) && holder[0] == '\0') {
            holder = status.member;
        }
    }
    const bool fenced = snowflake::fleet_holds_this_node(assessments, count) && round.node_valid;
    publish(statuses, count, GetCurrentTimestamp(), fenced, node.node.bits, holder);
    log_changes(statuses, count, fenced, holder);
}

// With the guard off, nothing is shown and nothing is fenced.
void clear_results() {
    publish(nullptr, 0, 0, false, -1, "");
    log_changes(nullptr, 0, false, "");
}

// Refuses when the library is not preloaded: there is no guard and nothing to show.
void require_fleet_memory() {
    if (fleet_shared == nullptr) {
        snowflake_report_not_preloaded(
            "The fleet guard runs and keeps its results only in a server that preloads the "
            "library.");
    }
}

// The columns of a row of snowflake_fleet_status().
constexpr int kStatusColumnCount = 7;

}  // namespace

Size snowflake_fleet_memory_size() {
    return sizeof(FleetShared);
}

void snowflake_request_fleet_lock() {
    RequestNamedLWLockTranche("snowflake fleet", 1);
}

void snowflake_attach_fleet_memory() {
    bool found = false;
    void *memory = ShmemInitStruct("snowflake fleet", sizeof(FleetShared), &found);
    fleet_shared = static_cast<FleetShared *>(memory);
    if (!found) {
        new (memory) FleetShared();
        ConditionVariableInit(&fleet_shared->first_check_cv);
        fleet_shared->lock = &GetNamedLWLockTranche("snowflake fleet")[0].lock;
        // A clone or a restored copy draws its own at its start, which is what tells it apart.
        uint64_t token = 0;
        if (!pg_strong_random(&token, sizeof(token))) {
            token = static_cast<uint64_t>(GetCurrentTimestamp()) ^
                    (static_cast<uint64_t>(MyProcPid) << 32);
        }
        // 0 stands for "no token" where the library is not preloaded.
        fleet_shared->instance_token = token != 0 ? token : 1;
    }
}

void snowflake_register_fleet_guard() {
    BackgroundWorker worker{};
    strlcpy(worker.bgw_name, "snowflake fleet guard", BGW_MAXLEN);
    strlcpy(worker.bgw_type, "snowflake fleet guard", BGW_MAXLEN);
    worker.bgw_flags = BGWORKER_SHMEM_ACCESS;
    // A standby generates nothing; the guard starts once the server can generate.
    worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
    worker.bgw_restart_time = 10;
    strlcpy(worker.bgw_library_name, "snowflake", BGW_MAXLEN);
    strlcpy(worker.bgw_function_name, "snowflake_fleet_guard_main", BGW_MAXLEN);
    RegisterBackgroundWorker(&worker);
}

uint64_t snowflake_own_instance_token() {
    return fleet_shared != nullptr ? fleet_shared->instance_token : 0;
}

const char *snowflake_show_instance_token() {
    if (fleet_shared == nullptr) {
        return "";
    }
    return psprintf("%016" PRIx64, fleet_shared->instance_token);
}

bool snowflake_check_fleet_setting(char **new_value, void **extra, GucSource source) {
    const char *list = *new_value != nullptr ? *new_value : "";
    snowflake::FleetSpan spans[snowflake::kMaxFleetMembers];
    const snowflake::FleetSplit split = snowflake::split_fleet_list(list, spans);
    // Every message is set here, so that PostgreSQL's own, which quotes the value, is not used.
    GUC_check_errmsg("invalid value for parameter \"snowflake.fleet\"");
    if (split.too_many) {
        GUC_check_errdetail("snowflake.fleet lists more than %d servers.",
                            snowflake::kMaxFleetMembers);
        return false;
    }
    for (int i = 0; i < split.count; i++) {
        char *member = pnstrdup(list + spans[i].begin, spans[i].length);
        const ConninfoFacts facts = snowflake_inspect_conninfo(member);
        pfree(member);
        if (!facts.parses) {
            // libpq's message quotes the string: it is not shown.
            GUC_check_errdetail("Member %d of snowflake.fleet is not a libpq connection string.",
                                i + 1);
            GUC_check_errhint(
                "Separate the members with semicolons, such as "
                "'host=10.0.0.1 port=5432 dbname=app; host=10.0.0.2 port=5432 "
                "dbname=app'.");
            return false;
        }
        if (facts.carries_secret) {
            // PostgreSQL logs a changed setting's new value at every reload.
            GUC_check_errdetail(
                "Member %d of snowflake.fleet carries a password, which the "
                "server log would show.",
                i + 1);
            GUC_check_errhint(
                "Put the passwords in the passfile of the operating-system user "
                "that runs the server (~/.pgpass, or passfile= in the string).");
            return false;
        }
    }
    return true;
}

void snowflake_report_node_held(int datacenter_id, int machine_id) {
    char holder[kMemberTextBytes] = "another member";
    if (fleet_shared != nullptr) {
        LWLockAcquire(fleet_shared->lock, LW_SHARED);
        if (fleet_shared->node_holder[0] != '\0') {
            strlcpy(holder, fleet_shared->node_holder, sizeof(holder));
        }
        LWLockRelease(fleet_shared->lock);
    }
    ereport(ERROR,
            (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
             errmsg("node pair (%d, %d) is also held by live fleet member %s", datacenter_id,
                    machine_id, holder),
             errdetail("Two servers with one node pair issue the same ids; with "
                       "snowflake.on_duplicate_node = refuse this server generates none while "
                       "the fleet guard finds the other one."),
             errhint("Give one of the two servers its own snowflake.datacenter_id or "
                     "snowflake.machine_id and reload, or stop the one that should not "
                     "generate; generation resumes by itself at the next check.")));
    pg_unreachable();
}

bool snowflake_first_fleet_check_seen = false;

void snowflake_wait_for_first_fleet_check(SnowflakeShared *shared, int64_t node_bits) {
    if (fleet_shared == nullptr || fleet_shared->first_check_done.load(std::memory_order_acquire)) {
        snowflake_first_fleet_check_seen = true;
        return;
    }
    if (!guard_is_on() || snowflake_on_duplicate_node_setting != kFleetDuplicateRefuse) {
        return;
    }
    // Long enough for a round that starts now, or that started a moment ago; a worker that is
    // not running (dead and waiting to be started again) makes this refuse, not wait forever.
    const TimestampTz called_at = GetCurrentTimestamp();
    const int64 allowed_us = static_cast<int64>(member_time_limit_ms() + kRoundOverheadMs) * 1000;
    ConditionVariablePrepareToSleep(&fleet_shared->first_check_cv);
    for (;;) {
        if (fleet_shared->first_check_done.load(std::memory_order_acquire)) {
            snowflake_first_fleet_check_seen = true;
            break;
        }
        if (shared->fenced_node_bits.load(std::memory_order_acquire) == node_bits) {
            break;
        }
        const TimestampTz started_at =
            fleet_shared->round_started_at.load(std::memory_order_relaxed);
        const TimestampTz deadline = Max(called_at, started_at) + allowed_us;
        const long remaining_ms =
            static_cast<long>((deadline - GetCurrentTimestamp() + 999) / 1000);
        if (remaining_ms <= 0) {
            ConditionVariableCancelSleep();
            ereport(ERROR,
                    (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                     errmsg("the fleet guard's first check since the server started has not "
                            "finished"),
                     errdetail("With snowflake.on_duplicate_node = refuse this server issues no "
                               "id until the fleet guard has heard from every member of "
                               "snowflake.fleet or given up on it; this call waited %d ms.",
                               static_cast<int>((GetCurrentTimestamp() - called_at) / 1000)),
                     errhint("Try again in a moment. If this persists, the server log says why "
                             "the \"snowflake fleet guard\" worker is not running; to generate "
                             "without waiting, set snowflake.on_duplicate_node = warn and "
                             "reload.")));
        }
        // Wakes at every publication; ends, like any wait, on a cancel or statement_timeout.
        (void)ConditionVariableTimedSleep(&fleet_shared->first_check_cv, remaining_ms,
                                          PG_WAIT_EXTENSION);
    }
    ConditionVariableCancelSleep();
}

// The worker: checks, then sleeps for the interval; a reload is applied before the next check,
// and a shutdown request ends a check or a sleep at once.
void snowflake_fleet_guard_main(Datum) {
    pqsignal(SIGHUP, SignalHandlerForConfigReload);
    pqsignal(SIGTERM, die);
    BackgroundWorkerUnblockSignals();
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
        const bool on = guard_is_on();
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
        const int events = WL_LATCH_SET | WL_EXIT_ON_PM_DEATH | (on ? WL_TIMEOUT : 0);
        (void)WaitLatch(MyLatch, events,
                        on ? static_cast<long>(snowflake_fleet_check_interval_setting) * 1000 : -1,
                        PG_WAIT_EXTENSION);
        ResetLatch(MyLatch);
    }
}

// One row per member of the last check.
Datum snowflake_fleet_status(PG_FUNCTION_ARGS) {
    require_fleet_memory();
    InitMaterializedSRF(fcinfo, 0);
    const auto *result_info = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);
    Tuplestorestate *store = result_info->setResult;
    const TupleDesc tupdesc = result_info->setDesc;
    LWLockAcquire(fleet_shared->lock, LW_SHARED);
    const TimestampTz checked_at = fleet_shared->checked_at;
    const int count = checked_at != 0 ? fleet_shared->member_count : 0;
    auto *statuses = static_cast<MemberStatus *>(palloc(sizeof(MemberStatus) * Max(count, 1)));
    if (count > 0) {
        memcpy(statuses, fleet_shared->members, sizeof(MemberStatus) * count);
    }
    LWLockRelease(fleet_shared->lock);
    for (int r = 0; r < count; r++) {
        const MemberStatus &status = statuses[r];
        const bool ids_known = status.answered && !status.self;
        Datum values[kStatusColumnCount];
        bool nulls[kStatusColumnCount];
        int i = 0;
        values[i] = CStringGetTextDatum(status.member);
        nulls[i++] = false;
        values[i] = BoolGetDatum(status.self);
        nulls[i++] = false;
        values[i] =
            Int32GetDatum(status.self ? snowflake_datacenter_id_setting : status.datacenter_id);
        nulls[i++] = status.self ? snowflake_datacenter_id_setting < 0
                                 : !ids_known || status.datacenter_id < 0;
        values[i] = Int32GetDatum(status.self ? snowflake_machine_id_setting : status.machine_id);
        nulls[i++] =
            status.self ? snowflake_machine_id_setting < 0 : !ids_known || status.machine_id < 0;
        values[i] = Int64GetDatum(status.clock_offset_ms);
        nulls[i++] = !status.answered;
        values[i] = CStringGetTextDatum(status.problem);
        nulls[i++] = status.problem[0] == '\0';
        values[i] = TimestampTzGetDatum(checked_at);
        nulls[i++] = false;
        Assert(i == kStatusColumnCount);
        tuplestore_putvalues(store, tupdesc, values, nulls);
    }
    return static_cast<Datum>(0);
}

// When the guard last checked, how many members it saw and how many with a problem, and
// whether this server refuses to generate.
Datum snowflake_fleet_summary(PG_FUNCTION_ARGS) {
    require_fleet_memory();
    TupleDesc tupdesc;
    if (get_call_result_type(fcinfo, nullptr, &tupdesc) != TYPEFUNC_COMPOSITE) {
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("snowflake_fleet_summary() must return a composite type")));
    }
    tupdesc = BlessTupleDesc(tupdesc);
    LWLockAcquire(fleet_shared->lock, LW_SHARED);
    const TimestampTz checked_at = fleet_shared->checked_at;
    const int count = checked_at != 0 ? fleet_shared->member_count : 0;
    int with_problems = 0;
    for (int m = 0; m < count; m++) {
        with_problems += fleet_shared->members[m].problems != 0 ? 1 : 0;
    }
    // What snowflake_nextval() in this session would do.
    const snowflake::NodeResult node =
        snowflake::make_node(snowflake_datacenter_id_setting, snowflake_machine_id_setting);
    const bool refusing = node.status == snowflake::CodecStatus::kOk &&
                          snowflake_node_fenced(snowflake_shared, node.node.bits);
    LWLockRelease(fleet_shared->lock);
    constexpr int kSummaryColumnCount = 4;
    Datum values[kSummaryColumnCount];
    bool nulls[kSummaryColumnCount];
    int i = 0;
    values[i] = TimestampTzGetDatum(checked_at);
    nulls[i++] = checked_at == 0;
    values[i] = Int32GetDatum(count);
    nulls[i++] = false;
    values[i] = Int32GetDatum(with_problems);
    nulls[i++] = false;
    values[i] = BoolGetDatum(refusing);
    nulls[i++] = false;
    Assert(i == kSummaryColumnCount);
    PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}
