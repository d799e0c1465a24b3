// The first id of an instant, as snowflake_min_id() computes it, for the glue's own bounds (the
// conversion's lowest new id, time partitions' now and retention). Include after postgres.h.
#pragma once

#include "core/codec.hpp"

// A sub-millisecond instant rounds up, so that the bound stays exact.
inline int64 snowflake_min_id_at(TimestampTz instant) {
    return snowflake::min_id_at_or_after(snowflake::unix_ms_ceil_from_pg_us(instant));
}
