// Objects as the messages and reports name them. Include after postgres.h.
#pragma once

extern "C" {
#include "utils/builtins.h"
}

// The table as regclass prints it: qualified unless the search path (pinned to pg_catalog,
// pg_temp while the glue runs a call) finds it by name alone.
inline char *table_text(Oid relation) {
    return DatumGetCString(DirectFunctionCall1(regclassout, ObjectIdGetDatum(relation)));
}
