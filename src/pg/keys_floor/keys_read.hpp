// The read of one database's stored keys for the floor from keys (keys_read.cpp). Include only
// after postgres.h.
#pragma once

#include <type_traits>

#include "core/key_floor.hpp"

// How long a read waits in all for locks that other sessions hold (on a database's tables and
// indexes, and on the database itself) before the read of that database fails, to be tried again.
inline constexpr long kKeysLockWaitBudgetMs = 1000;

// What the read of one database found. The texts live in the caller's memory context.
struct DatabaseKeys {
    int columns;
    // The highest key of this server's pair in the window, or -1, and where it is stored.
    int64 in_window;
    const char *in_window_source;
    // The highest key of this server's pair beyond the window, or -1, where it is stored, and how
    // many keys and columns hold such a key (each column is logged).
    int64 beyond_window;
    const char *beyond_window_source;
    uint64 beyond_window_keys;
    int beyond_window_columns;
};

static_assert(std::is_trivially_destructible_v<DatabaseKeys>,
              "a read's result lives across ereport calls and must own nothing");

// How many tables may be truncated, rewritten or dropped during the read of one database before
// the read fails, naming them, rather than begin again once more: each such table is locked for
// the whole of every later pass, so that it cannot change again.
inline constexpr int kChangedTablesLimit = 8;

// Reads every column of the connected database that may hold keys, as the bootstrap superuser in
// a security-restricted operation with search_path pinned. Runs in a transaction with an active
// snapshot; the caller's settings and user are restored before it returns. A table or index
// locked past a second, a prepared transaction, or more than kChangedTablesLimit tables changed
// under the read fail it with an error that names them.
DatabaseKeys snowflake_read_database_keys(const snowflake::KeyWindow &window);
