// The server-wide state in shared memory and the settings, as seen by the glue's source files.
// Include only after postgres.h: this header is part of the glue, not of the core.
#pragma once

#include <atomic>
#include <cstdint>

#include "core/generator.hpp"

// One backend's count of issued ids, written only by the backend that owns the PGPROC slot of the
// same index, on a cache line of its own so that counting never contends.
struct alignas(64) IdCounter {
    std::atomic<uint64_t> ids{0};
};

// The shared state: the generator word on a cache line of its own, then the rare-event counters;
// counter_count IdCounter slots follow the struct in the same shared-memory segment.
struct SnowflakeShared {
    alignas(64) snowflake::GeneratorState generator;
    alignas(64) std::atomic<uint64_t> sequence_waits{0};
    std::atomic<uint64_t> clock_rollbacks{0};
    std::atomic<uint64_t> unslotted_ids{0};
    uint32_t counter_count = 0;
};

// Null unless the library was loaded through shared_preload_libraries.
extern SnowflakeShared *snowflake_shared;

extern int snowflake_datacenter_id_setting;
extern int snowflake_machine_id_setting;
extern int snowflake_max_clock_rollback_wait_ms;

// Adds one to this backend's issued-id count without touching another backend's cache line.
void snowflake_count_issued_id(SnowflakeShared *shared);

// Sums every backend's issued-id count, for snowflake_info().
uint64_t snowflake_total_issued_ids(const SnowflakeShared *shared);
