// The floor from keys: after a start without a mark file (pg_upgrade, a restore without the file,
// its removal), the highest timestamp this server issued is unknown. The first
// snowflake_nextval() in each database then raises the generator above the highest key of every
// column whose default calls it, one max() (an index probe on a key) per column, so that ids
// issued from then on never repeat a key already stored. A file in the data directory keeps the
// check armed across restarts until every database that takes connections has been checked in
// one run. doc/operations.md "Upgrading PostgreSQL" says what it covers and what it cannot.
//
// Locking. keys_floor_pending is set at start-up and cleared only once every database was
// checked. The list of databases already checked is read and extended under mark_lock; the probe
// itself runs without it, so two backends of one database may both probe, which only raises the
// floor twice to the same value.

#include <fcntl.h>
#include <unistd.h>

extern "C" {
#include "postgres.h"

#include "catalog/pg_authid.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/fd.h"
#include "utils/array.h"
#include "utils/guc.h"
#include "utils/timestamp.h"
}

#include <algorithm>
#include <type_traits>

#include "core/codec.hpp"
#include "core/generator.hpp"
#include "pg/compat.hpp"
#include "pg/durable_mark.hpp"
#include "pg/keys_floor.hpp"
#include "pg/shared_state.hpp"

namespace {

// Present while some database may still hold keys above what the generator knows of.
constexpr char kKeysUncheckedFileName[] = "snowflake_keys_unchecked";

// A key further ahead of the clock than this was not issued by a sane generator (someone wrote
// it by hand): it is left out of the floor, with a warning, rather than stop generation for good.
constexpr int64 kFarFutureMs = 24 * 60 * 60 * 1000;

// The leaf tables that hold a bigint key (or a domain over bigint) whose default calls
// snowflake_nextval(): each partition carries its own copy of its parent's default; a foreign
// table lives elsewhere and another session's temporary table cannot be read. Each row: the
// table's owner, the table, the quoted column. Run with search_path pinned.
constexpr char kKeyColumnsQuery[] =
    "SELECT c.relowner, c.oid::pg_catalog.regclass::pg_catalog.text, "
    "pg_catalog.quote_ident(a.attname) "
    "FROM pg_catalog.pg_depend AS dep "
    "JOIN pg_catalog.pg_attrdef AS def ON def.oid = dep.objid "
    "JOIN pg_catalog.pg_class AS c ON c.oid = def.adrelid "
    "JOIN pg_catalog.pg_attribute AS a ON a.attrelid = def.adrelid AND a.attnum = def.adnum "
    "JOIN pg_catalog.pg_type AS t ON t.oid = a.atttypid "
    "WHERE dep.classid = 'pg_catalog.pg_attrdef'::pg_catalog.regclass "
    "AND dep.refclassid = 'pg_catalog.pg_proc'::pg_catalog.regclass "
    "AND dep.refobjid = $1 AND c.relkind = 'r' AND c.relpersistence <> 't' "
    "AND 'pg_catalog.int8'::pg_catalog.regtype IN (t.oid, t.typbasetype)";

// The databases that take connections, other than templates, and are not in the checked list.
constexpr char kUncheckedDatabasesQuery[] =
    "SELECT pg_catalog.count(*) FROM pg_catalog.pg_database "
    "WHERE datallowconn AND NOT datistemplate AND oid <> ALL ($1)";

// Whether another backend already checked this database since the start.
bool database_already_checked(SnowflakeShared *shared) {
    LWLockAcquire(shared->mark_lock, LW_SHARED);
    const Oid *first = shared->checked_databases;
    const Oid *last = first + shared->checked_database_count;
    const bool found = std::find(first, last, MyDatabaseId) != last;
    LWLockRelease(shared->mark_lock);
    return found;
}

// Once the list is full, every backend of a database not on it probes for itself: slower, still
// correct. Returns a copy of the list, for the question whether any database is left.
ArrayType *remember_database_checked(SnowflakeShared *shared) {
    Datum checked[kMaxCheckedDatabases];
    LWLockAcquire(shared->mark_lock, LW_EXCLUSIVE);
    const Oid *first = shared->checked_databases;
    if (std::find(first, first + shared->checked_database_count, MyDatabaseId) ==
            first + shared->checked_database_count &&
        shared->checked_database_count < kMaxCheckedDatabases) {
        shared->checked_databases[shared->checked_database_count++] = MyDatabaseId;
    }
    const uint32_t count = shared->checked_database_count;
    for (uint32_t i = 0; i < count; i++) {
        checked[i] = ObjectIdGetDatum(shared->checked_databases[i]);
    }
    LWLockRelease(shared->mark_lock);
    return construct_array_builtin(checked, static_cast<int>(count), OIDOID);
}

// Runs a one-value query and returns its bigint result, or -1 for NULL.
int64 query_bigint(const char *statement, int argument_count, Oid *argument_types,
                   Datum *arguments) {
    if (SPI_execute_with_args(statement, argument_count, argument_types, arguments, nullptr, true,
                              1) != SPI_OK_SELECT ||
        SPI_processed != 1) {
        elog(ERROR, "snowflake: could not run: %s", statement);
    }
    bool is_null = true;
    const Datum highest = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &is_null);
    return is_null ? -1 : DatumGetInt64(highest);
}

// Names the table whose probe failed, for an error raised inside it.
void probe_error_context(void *table) {
    errcontext(
        "snowflake: reading the highest key of %s after a start without the mark file "
        "(doc/operations.md \"Upgrading PostgreSQL\")",
        static_cast<const char *>(table));
}

struct KeyProbe {
    int columns;
    int64 highest_key;  // -1 when no column holds a key
};

static_assert(std::is_trivially_destructible_v<KeyProbe>,
              "a probe's result lives across ereport calls and must own nothing");

// Each table is read as its owner (restricted is the security context to do it in), the way
// PostgreSQL runs maintenance of a table: whatever code of the owner's the plan runs (an index
// predicate, say) runs with the owner's rights, never more.
KeyProbe probe_highest_key(Oid nextval_oid, int restricted) {
    const int64 bound_id = snowflake::min_id_at_or_after(
        snowflake::unix_ms_floor_from_pg_us(GetCurrentTimestamp()) + kFarFutureMs);
    KeyProbe probe{0, -1};
    SPI_connect();
    Oid oid_type[1] = {OIDOID};
    Datum nextval_argument[1] = {ObjectIdGetDatum(nextval_oid)};
    if (SPI_execute_with_args(kKeyColumnsQuery, 1, oid_type, nextval_argument, nullptr, true, 0) !=
        SPI_OK_SELECT) {
        elog(ERROR, "snowflake: could not list the columns whose default is snowflake_nextval()");
    }
    SPITupleTable *columns = SPI_tuptable;
    const uint64 column_count = SPI_processed;
    for (uint64 i = 0; i < column_count; i++) {
        bool is_null = true;
        const Oid owner =
            DatumGetObjectId(SPI_getbinval(columns->vals[i], columns->tupdesc, 1, &is_null));
        char *table = SPI_getvalue(columns->vals[i], columns->tupdesc, 2);
        const char *column = SPI_getvalue(columns->vals[i], columns->tupdesc, 3);
        ErrorContextCallback context{error_context_stack, probe_error_context, table};
        error_context_stack = &context;
        SetUserIdAndSecContext(owner, restricted);
        int64 highest = query_bigint(
            psprintf("SELECT pg_catalog.max(%s) FROM ONLY %s", column, table), 0, nullptr, nullptr);
        if (highest >= bound_id) {
            ereport(WARNING,
                    (errmsg("snowflake: key %lld of %s.%s is more than a day ahead of the clock; "
                            "it is left out of the generator's floor",
                            static_cast<long long>(highest), table, column),
                     errhint("Such a key was not issued by a generator with a sane clock; give "
                             "the row another key.")));
            Oid bigint_type[1] = {INT8OID};
            Datum bound[1] = {Int64GetDatum(bound_id)};
            highest = query_bigint(psprintf("SELECT pg_catalog.max(%s) FROM ONLY %s WHERE %s < $1",
                                            column, table, column),
                                   1, bigint_type, bound);
        }
        SetUserIdAndSecContext(BOOTSTRAP_SUPERUSERID, restricted);
        error_context_stack = context.previous;
        probe.highest_key = std::max(probe.highest_key, highest);
        probe.columns++;
    }
    SPI_finish();
    return probe;
}

// Raises the generator through the key's millisecond; a clock further behind it than a lease is
// refused like any clock step back.
void raise_floor_through_key(SnowflakeShared *shared, int64 key) {
    const snowflake::DecodeResult decoded = snowflake::decode(key);
    if (decoded.status != snowflake::CodecStatus::kOk) {
        return;
    }
    const snowflake::LastIssued last = snowflake::last_issued(shared->generator);
    if (last.any && last.unix_ms >= decoded.parts.unix_ms) {
        return;
    }
    snowflake_raise_generator_through(shared, decoded.parts.unix_ms);
}

// Once no database that takes connections is left unchecked, the mark file is trusted again.
void disarm_if_all_checked(SnowflakeShared *shared, ArrayType *checked) {
    SPI_connect();
    Oid array_type[1] = {OIDARRAYOID};
    Datum checked_argument[1] = {PointerGetDatum(checked)};
    const int64 unchecked = query_bigint(kUncheckedDatabasesQuery, 1, array_type, checked_argument);
    SPI_finish();
    if (unchecked != 0) {
        return;
    }
    if (durable_unlink(kKeysUncheckedFileName, LOG) == 0 || errno == ENOENT) {
        shared->keys_floor_pending.store(false, std::memory_order_relaxed);
        ereport(LOG, (errmsg("snowflake: every database has been checked for keys; \"%s\" is "
                             "removed and the mark file is trusted again",
                             kKeysUncheckedFileName)));
    }
}

}  // namespace

void snowflake_arm_keys_floor(SnowflakeShared *shared, bool mark_file_missing) {
    if (mark_file_missing) {
        const int fd = OpenTransientFile(kKeysUncheckedFileName, O_WRONLY | O_CREAT | PG_BINARY);
        if (fd < 0 || CloseTransientFile(fd) != 0 ||
            fsync_fname_ext(kKeysUncheckedFileName, false, false, LOG) != 0 ||
            fsync_fname_ext(".", true, false, LOG) != 0) {
            ereport(LOG, (errcode_for_file_access(),
                          errmsg("could not create \"%s\": %m; if the server restarts before "
                                 "every database was checked, the check is not repeated",
                                 kKeysUncheckedFileName)));
        }
        shared->keys_floor_pending.store(true, std::memory_order_relaxed);
        ereport(LOG,
                (errmsg("snowflake mark file \"%s\" not found", kMarkFileName),
                 errdetail("This is expected at the first start of a new data directory. After "
                           "pg_upgrade, a restore without the file or its removal, the highest "
                           "id this server issued is unknown: the first snowflake_nextval() in "
                           "each database raises the generator above the highest key of every "
                           "column whose default is snowflake_nextval(), after this start and "
                           "every next one until each database has been checked.")));
        return;
    }
    if (access(kKeysUncheckedFileName, F_OK) == 0) {
        shared->keys_floor_pending.store(true, std::memory_order_relaxed);
        ereport(LOG, (errmsg("snowflake: \"%s\" is present: the first snowflake_nextval() in each "
                             "database raises the generator above its keys, since not every "
                             "database was checked after the mark file was lost",
                             kKeysUncheckedFileName)));
    }
}

// The catalog is read as the bootstrap superuser, so that every table is found, in a
// security-restricted operation with search_path pinned; an error undoes both with the
// transaction.
void snowflake_check_database_keys(SnowflakeShared *shared, Oid nextval_oid) {
    if (database_already_checked(shared)) {
        return;
    }
    Oid saved_user;
    int saved_security_context;
    GetUserIdAndSecContext(&saved_user, &saved_security_context);
    const int restricted =
        saved_security_context | SECURITY_LOCAL_USERID_CHANGE | SECURITY_RESTRICTED_OPERATION;
    SetUserIdAndSecContext(BOOTSTRAP_SUPERUSERID, restricted);
    const int guc_nest_level = NewGUCNestLevel();
    (void)set_config_option("search_path", "pg_catalog, pg_temp", PGC_SUSET, PGC_S_SESSION,
                            GUC_ACTION_SAVE, true, 0, false);
    const KeyProbe probe = probe_highest_key(nextval_oid, restricted);
    if (probe.highest_key >= 0) {
        raise_floor_through_key(shared, probe.highest_key);
    }
    disarm_if_all_checked(shared, remember_database_checked(shared));
    AtEOXact_GUC(true, guc_nest_level);
    SetUserIdAndSecContext(saved_user, saved_security_context);

    const char *database = get_database_name(MyDatabaseId);
    if (probe.highest_key < 0) {
        ereport(LOG, (errmsg("snowflake: no keys to raise the generator above in database \"%s\" "
                             "(%d columns whose default is snowflake_nextval())",
                             database, probe.columns)));
    } else {
        const snowflake::DecodeResult decoded = snowflake::decode(probe.highest_key);
        ereport(
            LOG,
            (errmsg("snowflake: raised the generator above key %lld in database \"%s\"",
                    static_cast<long long>(probe.highest_key), database),
             errdetail("It is the highest key of %d columns whose default is "
                       "snowflake_nextval(); its timestamp is %s. Ids issued from now "
                       "on are above it.",
                       probe.columns,
                       timestamptz_to_str(snowflake::pg_us_from_unix_ms(decoded.parts.unix_ms)))));
    }
}
