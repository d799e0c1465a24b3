// The check of snowflake.fleet (fleet_setting.cpp). Include only after postgres.h: it is part of
// the glue.
#pragma once

extern "C" {
#include "postgres.h"

#include "utils/guc.h"
}

// Accepts a fleet list only if it has at most the members shared memory holds and libpq can
// parse each of them.
bool snowflake_check_fleet_setting(char **new_value, void **extra, GucSource source);
