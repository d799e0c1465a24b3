// The generator's clock (clock.hpp).

#include <ctime>

extern "C" {
#include "postgres.h"
}

#include "core/layout.hpp"
#include "pg/clock.hpp"

int64_t snowflake_wall_clock_unix_us() {
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    return static_cast<int64_t>(now.tv_sec) * 1000000 + now.tv_nsec / 1000;
}

int64_t snowflake_wall_clock_unix_ms() {
    return snowflake_wall_clock_unix_us() / 1000;
}

void snowflake_report_clock_out_of_range(int64_t now_unix_ms) {
    ereport(ERROR,
            (errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
             errmsg("the clock reads %lld Unix ms, outside the Snowflake timestamp range",
                    static_cast<long long>(now_unix_ms)),
             errdetail("Snowflake ids can be generated from %lld to %lld Unix ms "
                       "(2010-11-04 01:42:54.657 to 2080-07-10 17:30:30.208 UTC).",
                       static_cast<long long>(snowflake::kEpochUnixMs),
                       static_cast<long long>(snowflake::kMaxUnixMs)),
             errhint("Fix the system clock: nothing was issued or changed at this reading.")));
    pg_unreachable();
}
