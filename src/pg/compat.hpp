// What differs between the PostgreSQL versions the glue builds against (15 to 19), in one place.
// Include only after postgres.h; every #if on PG_VERSION_NUM in the glue belongs here.
#pragma once

extern "C" {
#include "access/genam.h"
#include "access/transam.h"
#include "access/tupdesc.h"
#include "access/tableam.h"
#include "access/xlogdefs.h"
#include "catalog/pg_proc.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "replication/syncrep.h"
#include "replication/walsender_private.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "utils/acl.h"
#include "utils/guc.h"
#include "utils/regproc.h"
#include "utils/syscache.h"
#include "utils/wait_event.h"
// get_database_name() moved from commands/dbcommands.h to utils/lsyscache.h in PostgreSQL 19.
#if PG_VERSION_NUM >= 190000
#include "utils/lsyscache.h"
#else
#include "commands/dbcommands.h"
#endif
}

// PostgreSQL 13 and 14 have no custom WAL resource managers, without which a promoted standby
// could reissue ids its primary handed out (doc/testing.md "Supported versions").
#if PG_VERSION_NUM < 150000
#error \
    "snowflake needs PostgreSQL 15 or later: before 15 no custom WAL resource manager can carry its durable mark to standbys"
#endif

// The module's magic block; from 18 on it also names the library and its version, which
// pg_get_loaded_modules() shows. SNOWFLAKE_VERSION comes from the Makefile (the control file).
#if PG_VERSION_NUM >= 180000
#define SNOWFLAKE_MODULE_MAGIC \
    PG_MODULE_MAGIC_EXT(.name = "snowflake", .version = SNOWFLAKE_VERSION)
#else
#define SNOWFLAKE_MODULE_MAGIC PG_MODULE_MAGIC
#endif

// The tree walkers take a callback of a C type that PostgreSQL 16 changed.
#if PG_VERSION_NUM >= 160000
#define SNOWFLAKE_WALKER_CALLBACK(function) (function)
#else
// Through void (*)(void), the one function type a cast may pass through without a warning.
#define SNOWFLAKE_WALKER_CALLBACK(function) \
    reinterpret_cast<bool (*)()>(reinterpret_cast<void (*)()>(function))
#endif

// The tree mutators likewise.
#if PG_VERSION_NUM >= 160000
#define SNOWFLAKE_MUTATOR_CALLBACK(function) (function)
#else
#define SNOWFLAKE_MUTATOR_CALLBACK(function) \
    reinterpret_cast<Node *(*)()>(reinterpret_cast<void (*)()>(function))
#endif

// This backend's PGPROC index, or -1 in a process without one; PostgreSQL 17 renamed it.
inline int snowflake_own_proc_number() {
#if PG_VERSION_NUM >= 170000
    return MyProcNumber;
#else
    return MyProc != nullptr ? MyProc->pgprocno : -1;
#endif
}

// The PGPROC index of another process, such as a parallel worker's leader.
inline int snowflake_proc_number_of(const PGPROC *proc) {
#if PG_VERSION_NUM >= 170000
    return GetNumberFromPGProc(proc);
#else
    return proc->pgprocno;
#endif
}

// Whether the current role may execute a function; PostgreSQL 16 generalised the check.
inline bool snowflake_may_execute(Oid function) {
#if PG_VERSION_NUM >= 160000
    return object_aclcheck(ProcedureRelationId, function, GetUserId(), ACL_EXECUTE) == ACLCHECK_OK;
#else
    return pg_proc_aclcheck(function, GetUserId(), ACL_EXECUTE) == ACLCHECK_OK;
#endif
}

// The WAL position that every synchronous standby has flushed. Read without SyncRepLock: an
// 8-byte aligned load is atomic, and a stale value only makes the caller look again. Only lsn[] is
// read: the flag beside it changed its meaning between minor releases, and an extension built
// against one minor release runs on the others.
inline XLogRecPtr snowflake_synchronous_standbys_flushed_lsn() {
    const volatile WalSndCtlData *control = WalSndCtl;
    return control->lsn[SYNC_REP_WAIT_FLUSH];
}

// The planner hook's parameters and the arguments it passes on to the next planner. PostgreSQL
// 19 added the EXPLAIN state of the statement being planned (NULL outside EXPLAIN), which a hook
// must hand on unchanged so that planners further down can report into EXPLAIN.
#if PG_VERSION_NUM >= 190000
#define SNOWFLAKE_PLANNER_PARAMETERS                                                        \
    Query *parse, const char *query_string, int cursor_options, ParamListInfo bound_params, \
        ExplainState *explain_state
#define SNOWFLAKE_PLANNER_ARGUMENTS parse, query_string, cursor_options, bound_params, explain_state
#else
#define SNOWFLAKE_PLANNER_PARAMETERS \
    Query *parse, const char *query_string, int cursor_options, ParamListInfo bound_params
#define SNOWFLAKE_PLANNER_ARGUMENTS parse, query_string, cursor_options, bound_params
#endif

// The type a syscache invalidation callback receives the cache's id as: an enum from 19 on.
#if PG_VERSION_NUM >= 190000
using SnowflakeSyscacheId = SysCacheIdentifier;
#else
using SnowflakeSyscacheId = int;
#endif

// The wait event under which one of the extension's waits shows in pg_stat_activity: its own
// name from PostgreSQL 17 on (WaitEventExtensionNew), Extension before. The id is looked up once
// per name and process, since the lookup takes a lock. Only in a process attached to shared
// memory, never in a critical section: the first lookup of a name may raise an error.
inline uint32 snowflake_wait_event(const char *name) {
#if PG_VERSION_NUM >= 170000
    struct NamedWait {
        const char *name;
        uint32 id;
    };
    // More than the extension's names, so that every one is kept.
    static NamedWait known[12];
    static int known_count = 0;
    for (int i = 0; i < known_count; i++) {
        if (strcmp(known[i].name, name) == 0) {
            return known[i].id;
        }
    }
    const uint32 id = WaitEventExtensionNew(name);
    if (known_count < static_cast<int>(lengthof(known))) {
        known[known_count++] = NamedWait{name, id};
    }
    return id;
#else
    (void)name;
    return PG_WAIT_EXTENSION;
#endif
}

// A wait event set that no resource owner tracks: the caller frees it however it ends.
// PostgreSQL 17 takes a resource owner where 15 and 16 take a memory context.
inline WaitEventSet *snowflake_create_wait_event_set(int events) {
#if PG_VERSION_NUM >= 170000
    return CreateWaitEventSet(nullptr, events);
#else
    return CreateWaitEventSet(CurrentMemoryContext, events);
#endif
}

// An index scan with no instrumentation and no ordering operators: PostgreSQL 18 added the
// instrumentation argument, 19 the scan options.
inline IndexScanDesc snowflake_index_beginscan(Relation table, Relation index, Snapshot snapshot,
                                               int key_count) {
#if PG_VERSION_NUM >= 190000
    return index_beginscan(table, index, snapshot, nullptr, key_count, 0, SO_NONE);
#elif PG_VERSION_NUM >= 180000
    return index_beginscan(table, index, snapshot, nullptr, key_count, 0);
#else
    return index_beginscan(table, index, snapshot, key_count, 0);
#endif
}

// A scan of a whole table with no scan keys; PostgreSQL 19 added the scan options.
inline TableScanDesc snowflake_table_beginscan(Relation table, Snapshot snapshot) {
#if PG_VERSION_NUM >= 190000
    return table_beginscan(table, snapshot, 0, nullptr, SO_NONE);
#else
    return table_beginscan(table, snapshot, 0, nullptr);
#endif
}

// Deletes one row outside the executor, as the current command, without a crosscheck snapshot;
// PostgreSQL 19 replaced the flag for a row moving between partitions by a set of options.
inline TM_Result snowflake_tuple_delete(Relation table, ItemPointer row, Snapshot snapshot,
                                        bool wait, TM_FailureData *failure) {
#if PG_VERSION_NUM >= 190000
    return table_tuple_delete(table, row, GetCurrentCommandId(true), 0, snapshot, InvalidSnapshot,
                              wait, failure);
#else
    return table_tuple_delete(table, row, GetCurrentCommandId(true), snapshot, InvalidSnapshot,
                              wait, failure, false);
#endif
}

// An input function's error that PostgreSQL 16 and later can take softly (pg_input_is_valid(),
// COPY ... ON_ERROR ignore, JSON_VALUE ... ON ERROR) through the call's error context; before 16
// every input error is thrown. Used as a statement: it returns from the input function.
#if PG_VERSION_NUM >= 160000
#define snowflake_input_error(fcinfo, ...) ereturn((fcinfo)->context, (Datum) 0, __VA_ARGS__)
#else
#define snowflake_input_error(fcinfo, ...) \
    do {                                   \
        ereport(ERROR, __VA_ARGS__);       \
        return (Datum) 0;                  \
    } while (0)
#endif

// The mark of a database that an interrupted DROP DATABASE left behind, which no one can connect
// to: PostgreSQL 15.4 and 16 brought it, earlier 15 minors have no such state.
#ifndef DATCONNLIMIT_INVALID_DB
#define DATCONNLIMIT_INVALID_DB (-2)
#endif

// The flags of a worker connected as a caller's session user: PostgreSQL 17 lets it connect though
// the role may no longer log in, as the caller's own session still does.
constexpr int kSnowflakeCallerWorkerFlags =
#if PG_VERSION_NUM >= 170000
    BGWORKER_BYPASS_ALLOWCONN | BGWORKER_BYPASS_ROLELOGINCHECK;
#else
    BGWORKER_BYPASS_ALLOWCONN;
#endif

// transaction_timeout (PostgreSQL 17) set back to its default in a worker whose role's or
// database's defaults could end it.
inline void snowflake_reset_transaction_timeout(GucSource source) {
#if PG_VERSION_NUM >= 170000
    SetConfigOption("transaction_timeout", "0", PGC_SUSET, source);
#endif
}
// The oldest xid whose status the commit log still holds; PostgreSQL 17 renamed the struct.
inline TransactionId snowflake_oldest_clog_xid() {
#if PG_VERSION_NUM >= 170000
    return TransamVariables->oldestClogXid;
#else
    return ShmemVariableCache->oldestClogXid;
#endif
}

// A qualified name's parts, as regclass's input splits it; PostgreSQL 16 added soft errors.
inline List *snowflake_qualified_name_list(const char *text) {
#if PG_VERSION_NUM >= 160000
    return stringToQualifiedNameList(text, nullptr);
#else
    return stringToQualifiedNameList(text);
#endif
}

// A tuple descriptor built column by column is finished with TupleDescFinalize() from PostgreSQL
// 19 on, which computes what its tuples' deforming caches; before 19 there is nothing to finish.
inline void snowflake_finalize_tuple_desc(TupleDesc description) {
#if PG_VERSION_NUM >= 190000
    TupleDescFinalize(description);
#else
    (void)description;
#endif
}

// search_path set to pg_catalog, pg_temp until the GUC nest level ends; PostgreSQL 17 gave its
// maintenance commands a function for it.
inline void snowflake_restrict_search_path() {
#if PG_VERSION_NUM >= 170000
    RestrictSearchPath();
#else
    (void)set_config_option("search_path", "pg_catalog, pg_temp", PGC_USERSET, PGC_S_SESSION,
                            GUC_ACTION_SAVE, true, 0, false);
#endif
}
