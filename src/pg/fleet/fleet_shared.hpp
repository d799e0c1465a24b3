// The fleet guard's shared memory (created by fleet_memory.cpp), internal to the guard's files:
// the worker (fleet_guard.cpp) writes it, the SQL functions (fleet_functions.cpp) and the refusal
// of snowflake_nextval() (fleet_refusal.cpp) read it. Include only after postgres.h.
//
// Concurrency. Only the worker writes the results, under the "snowflake fleet" LWLock, which the
// SQL functions take shared; snowflake_nextval() reads only the fence word (fenced_node_bits in
// SnowflakeShared), with no lock. The word says which pair a live duplicate holds, whatever
// snowflake.on_duplicate_node says; each backend decides by its own value of that setting, so
// that a reload from one mode to the other takes effect at once. The worker never holds the lock
// while it connects; it sets first_check_done once, after its first whole round since the
// server started, and wakes the backends that wait for it through first_check_cv. A worker that
// dies and is started again leaves all of it as the last round (or the fence, mid-round) set it.
#pragma once

#include <atomic>
#include <cstdint>

extern "C" {
#include "postgres.h"

#include "datatype/timestamp.h"
#include "storage/condition_variable.h"
#include "storage/lwlock.h"
}

#include "core/fleet.hpp"
#include "pg/settings.hpp"

// Room for a member's connection string (passwords masked) and its problems' words; longer text
// is cut.
constexpr size_t kMemberTextBytes = 256;
constexpr size_t kProblemWordsBytes = 512;
// The longest a member may take to answer, unless the interval is shorter.
constexpr int kMemberTimeoutMs = 5000;

// One member as the last check found it.
struct MemberStatus {
    char member[kMemberTextBytes];
    bool self;
    bool answered;
    int32_t datacenter_id;  // -1: not set, not loaded, or no answer
    int32_t machine_id;
    int64_t clock_offset_ms;
    uint32_t problem_bits;  // snowflake::MemberProblem bits
    // What snowflake_fleet_status() shows as the problem: the words for problem_bits.
    char problem_words[kProblemWordsBytes];
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

// Null where the library is not preloaded.
extern FleetShared *snowflake_fleet_shared;

// The longest the worker waits for one member's answer.
inline int snowflake_member_time_limit_ms() {
    return Min(kMemberTimeoutMs, snowflake_fleet_check_interval_setting * 1000);
}

// Whether this process's settings turn the guard on.
inline bool snowflake_fleet_guard_is_on() {
    return snowflake_fleet_check_interval_setting > 0 && snowflake_fleet_setting != nullptr &&
           snowflake_fleet_setting[0] != '\0';
}
