// The settled bound's SQL functions: a reader's call moves a quiet generator up to the clock
// first, as an id drawn then would, then takes the bound from the settled room. The error-boundary
// rules are stated at the top of module.cpp.

extern "C" {
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xlog.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/pg_lsn.h"

PG_FUNCTION_INFO_V1(snowflake_settled_bound);
PG_FUNCTION_INFO_V1(snowflake_settled_bound_lsn);
}

#include "core/generator.hpp"
#include "core/mark_rules.hpp"
#include "pg/clock.hpp"
#include "pg/fleet/fleet_refusal.hpp"
#include "pg/mark/mark.hpp"
#include "pg/settings.hpp"
#include "pg/settled/settled.hpp"
#include "pg/shared_state.hpp"

namespace {

// Whether nothing but the clock stops this server from issuing its configured pair's ids now:
// only then may a bound call move the generator on, as an id drawn now would.
bool issuing_freely(SnowflakeShared *shared, int64_t *node_bits) {
    if (snowflake_datacenter_id_setting < 0 || snowflake_machine_id_setting < 0 ||
        shared->mark_file_state != MarkFileState::kUsable || shared->keys_floor.pending.load() ||
        shared->keys_floor.beyond_hold.load() >= 0) {
        return false;
    }
    *node_bits = snowflake::make_node(snowflake_datacenter_id_setting, snowflake_machine_id_setting)
                     .node.bits;
    return shared->mark_node_bits.load() == *node_bits &&
           !snowflake_node_fenced(shared, *node_bits);
}

// Moves a quiet generator up to the clock, so that the settled bound moves with it: every id
// issued later is above the last millisecond. It does only what an id drawn at the same clock
// reading would do (core/mark_rules.hpp): nothing while the clock is behind the last timestamp
// or outside the layout, and never past the mark. The bound itself never passes what the mark
// covers (settled.cpp).
void raise_quiet_generator(SnowflakeShared *shared) {
    int64_t node_bits = 0;
    if (!issuing_freely(shared, &node_bits)) {
        return;
    }
    const int64 now_unix_ms = snowflake_wall_clock_unix_ms();
    const uint64_t word = shared->generator.after_last_id.load(std::memory_order_acquire);
    if (!snowflake::clock_moves_generator(word, snowflake::Node{node_bits}, now_unix_ms)) {
        return;
    }
    // A mark that cannot be written leaves the reader the bound the mark covers already, and a
    // warning that says why the bound stands still.
    snowflake_extend_durable_mark(shared, now_unix_ms, node_bits, false, WARNING);
    const int64 mark_ms = shared->durable_mark_ms.load(std::memory_order_acquire);
    snowflake_raise_generator(shared, snowflake::quiet_raise_through(now_unix_ms, mark_ms),
                              GeneratorRaise::kClock);
}

// The bound for a reader, refused where it cannot be used safely, and as ids are while the mark
// file cannot be used: the highest id issued is unknown then.
int64 reader_bound() {
    snowflake_check_bound_reader();
    snowflake_require_usable_mark(snowflake_shared);
    raise_quiet_generator(snowflake_shared);
    return snowflake_reader_bound();
}

}  // namespace

// The bound for a reader that follows a table by id: every id below it that this server issued
// belongs to a transaction whose end is visible to the reader's next snapshot.
Datum snowflake_settled_bound(PG_FUNCTION_ARGS) {
    PG_RETURN_INT64(reader_bound());
}

// The bound and the WAL position after it, for a reader on a standby: once the standby has
// replayed past the position, the end of every transaction below the bound is visible there.
Datum snowflake_settled_bound_lsn(PG_FUNCTION_ARGS) {
    const int64 bound = reader_bound();
    // Read after the bound: every commit or abort record of a transaction below it is before.
    const XLogRecPtr lsn = GetXLogInsertRecPtr();
    TupleDesc descriptor;
    if (get_call_result_type(fcinfo, nullptr, &descriptor) != TYPEFUNC_COMPOSITE) {
        ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
                        errmsg("snowflake_settled_bound_lsn() must return a row type"),
                        errhint("Run ALTER EXTENSION snowflake UPDATE, which declares it so.")));
    }
    Datum values[2] = {Int64GetDatum(bound), LSNGetDatum(lsn)};
    bool nulls[2] = {false, false};
    PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(descriptor), values, nulls)));
}
