// The fleet guard's shared memory (fleet_shared.hpp) and the instance token that the postmaster
// draws at each start, by which the guard recognises this server among the fleet's answers: a
// clone or a restored backup draws its own, and so does not share it.

#include <cinttypes>
#include <new>

extern "C" {
#include "postgres.h"

#include "miscadmin.h"
#include "storage/condition_variable.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/timestamp.h"
}

#include "pg/fleet/fleet_memory.hpp"
#include "pg/fleet/fleet_shared.hpp"

FleetShared *snowflake_fleet_shared = nullptr;

Size snowflake_fleet_memory_size() {
    return sizeof(FleetShared);
}

void snowflake_request_fleet_lock() {
    RequestNamedLWLockTranche("snowflake fleet", 1);
}

void snowflake_attach_fleet_memory() {
    bool found = false;
    void *memory = ShmemInitStruct("snowflake fleet", sizeof(FleetShared), &found);
    snowflake_fleet_shared = static_cast<FleetShared *>(memory);
    if (!found) {
        new (memory) FleetShared();
        ConditionVariableInit(&snowflake_fleet_shared->first_check_cv);
        snowflake_fleet_shared->lock = &GetNamedLWLockTranche("snowflake fleet")[0].lock;
        // A clone or a restored copy draws its own at its start, which is what tells it apart.
        uint64_t token = 0;
        if (!pg_strong_random(&token, sizeof(token))) {
            token = static_cast<uint64_t>(GetCurrentTimestamp()) ^
                    (static_cast<uint64_t>(MyProcPid) << 32);
        }
        // 0 stands for "no token" where the library is not preloaded.
        snowflake_fleet_shared->instance_token = token != 0 ? token : 1;
    }
}

uint64_t snowflake_own_instance_token() {
    return snowflake_fleet_shared != nullptr ? snowflake_fleet_shared->instance_token : 0;
}

const char *snowflake_show_instance_token() {
    if (snowflake_fleet_shared == nullptr) {
        return "";
    }
    return psprintf("%016" PRIx64, snowflake_fleet_shared->instance_token);
}
