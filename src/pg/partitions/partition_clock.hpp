// What the maintenance of time partitions (maintain_table.cpp) reads and says about the clock: an
// end of a table's keys (the newest is where the retention counts back from when the clock is ahead
// of it), the warning that says so, the gap in the partitions that a clock stepped ahead leaves and
// across which the retention removes nothing, and the refusal that names a clock far from the
// partitions. Include after postgres.h.
#pragma once

#include "core/partition_plan.hpp"

// Which end of a table's keys to read.
enum class KeyEnd { kOldest, kNewest };

// The table's oldest or newest key, read as its owner with every row seen (row_security off: a
// policy that applies to the owner makes it fail with 42501); false for a table without a row.
// An index on the key makes it one index lookup per partition, from that end to the first
// partition that holds a row.
bool read_key_end(Oid parent, Oid owner, AttrNumber key_attnum, const char *function_name,
                  KeyEnd end, int64 *key);

// The first id of the retention's start: retain before the instant from.
int64 retention_start_id(TimestampTz from, Datum retain);

// Warns that the newest key kept partitions that the clock alone would expire, with the clock's
// reading and the newest key's time, so that an operator sees a clock that is ahead. Called only
// where the clock puts every row beyond the retention: a table that gets rows less often than
// its maintenance runs keeps a partition more now and then, which is no news.
void warn_held_back(Oid parent, int held_back, TimestampTz now, int64 newest_key);

// Refuses a table whose boundaries would be too many because the clock lies far outside the span
// of its partitions (which alone would fit), naming the clock and how far it is from them.
void refuse_clock_far(Oid parent, int max_boundaries, TimestampTz now,
                      const snowflake::IdRange &span);

// Whether row-level security applies to the table's owner, whose read of the newest key it could
// hide: then warns that the retention is skipped this run, with the way out.
bool retention_hidden_by_policies(Oid parent, Oid owner);

// The gap nearest before the current period in the partitions as this run leaves them: those it
// found (any order) and those it created (created[period]), since a partition made now may close
// a gap.
snowflake::SeriesGap gap_before_now(const snowflake::IdRange *found, int found_count,
                                    const int64 *boundaries, int boundary_count,
                                    const bool *created, size_t current_period);

// The report's action for a partition kept because the gap lies between it and now.
const char *kept_before_gap(const snowflake::SeriesGap &gap, const char *time_zone);

// Warns, once per table and run, that the gap kept partitions the retention would remove, naming
// the gap in the table's time zone and the safe ways out, since a scheduled run's notices reach
// no log.
void warn_kept_before_gap(Oid parent, int kept, const snowflake::SeriesGap &gap,
                          const char *time_zone, const char *unit_name);
