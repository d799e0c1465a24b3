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
    // many columns hold such a key (each is logged).
    int64 beyond_window;
    const char *beyond_window_source;
    int beyond_window_columns;
};

static_assert(std::is_trivially_destructible_v<DatabaseKeys>,
              "a read's result lives across ereport calls and must own nothing");

// Reads every column of the connected database that may hold keys, as the bootstrap superuser in
// a security-restricted operation with search_path pinned. Runs in a transaction with an active
// snapshot; the caller's settings and user are restored before it returns. A table or index
// locked past a second, or a prepared transaction, fails the read with an error that names it.
DatabaseKeys snowflake_read_database_keys(const snowflake::KeyWindow &window);
