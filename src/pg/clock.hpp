// The generator's clock, for every reading that ids are compared with, and the refusal of a
// reading the layout cannot hold. Include only after postgres.h.
#pragma once

#include <cstdint>

// The wall clock in Unix microseconds: clock_gettime, which libfaketime moves in the tests.
int64_t snowflake_wall_clock_unix_us();

// The same in the milliseconds of the id layout: what ids, marks and stored keys are compared
// with.
int64_t snowflake_wall_clock_unix_ms();

// The 41-bit field cannot hold the clock's reading, before 2010 or after July 2080: 22003,
// naming the reading and the range.
[[noreturn]] void snowflake_report_clock_out_of_range(int64_t now_unix_ms);
