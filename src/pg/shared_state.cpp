// The shared state's pointer, its per-backend id counters and the refusal where it is missing
// (shared_state.hpp). module.cpp creates the state in shared memory.

#include <new>

extern "C" {
#include "postgres.h"

#include "miscadmin.h"
#include "storage/shmem.h"
}

#include "pg/compat.hpp"
#include "pg/shared_state.hpp"

SnowflakeShared *snowflake_shared = nullptr;

namespace {

IdCounter *own_id_counter = nullptr;

// Regular backends, including background and parallel workers, own PGPROC slots below this bound.
uint32_t counter_slot_count() {
    return static_cast<uint32_t>(MaxBackends);
}

// ShmemInitStruct aligns what it returns to PG_CACHE_LINE_SIZE, which must cover the struct's own
// alignment for the hot fields to stay apart.
static_assert(alignof(SnowflakeShared) <= PG_CACHE_LINE_SIZE &&
                  alignof(IdCounter) <= PG_CACHE_LINE_SIZE,
              "shared memory is not aligned enough for the shared state");

// The counters sit right after the struct, whose size is a multiple of their alignment.
IdCounter *id_counters(const SnowflakeShared *shared) {
    return reinterpret_cast<IdCounter *>(const_cast<SnowflakeShared *>(shared) + 1);
}

}  // namespace

Size snowflake_shared_state_size() {
    return add_size(sizeof(SnowflakeShared), mul_size(counter_slot_count(), sizeof(IdCounter)));
}

void snowflake_init_id_counters(SnowflakeShared *shared) {
    shared->counter_count = counter_slot_count();
    IdCounter *counters = id_counters(shared);
    for (uint32_t i = 0; i < shared->counter_count; i++) {
        new (&counters[i]) IdCounter();
    }
}

void snowflake_count_issued_id(SnowflakeShared *shared) {
    if (own_id_counter == nullptr) {
        const int proc_number = snowflake_own_proc_number();
        if (proc_number < 0 || static_cast<uint32_t>(proc_number) >= shared->counter_count) {
            shared->unslotted_ids.fetch_add(1, std::memory_order_relaxed);
            return;
        }
        own_id_counter = &id_counters(shared)[proc_number];
    }
    std::atomic<uint64_t> &ids = own_id_counter->ids;
    ids.store(ids.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

void snowflake_report_not_preloaded(const char *detail) {
    ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                    errmsg("snowflake must be loaded via shared_preload_libraries"),
                    errdetail("%s", detail),
                    errhint("Add shared_preload_libraries = 'snowflake' to postgresql.conf and "
                            "restart the server.")));
    pg_unreachable();
}

uint64_t snowflake_total_issued_ids(const SnowflakeShared *shared) {
    uint64_t total = shared->unslotted_ids.load(std::memory_order_relaxed);
    const IdCounter *counters = id_counters(shared);
    for (uint32_t i = 0; i < shared->counter_count; i++) {
        total += counters[i].ids.load(std::memory_order_relaxed);
    }
    return total;
}
