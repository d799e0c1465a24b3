// Objects as the messages and reports name them. Include after postgres.h.
#pragma once

extern "C" {
#include "utils/builtins.h"
#include "utils/lsyscache.h"
}

// The table as regclass prints it: qualified unless the search path (pinned to pg_catalog,
// pg_temp while the glue runs a call) finds it by name alone.
inline char *table_text(Oid relation) {
    return DatumGetCString(DirectFunctionCall1(regclassout, ObjectIdGetDatum(relation)));
}

// The relation's name qualified with its schema, whatever the search path, for the statements
// the glue builds.
inline char *qualified_table_text(Oid relation) {
    return quote_qualified_identifier(get_namespace_name(get_rel_namespace(relation)),
                                      get_rel_name(relation));
}
