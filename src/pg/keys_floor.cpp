// The floor from keys: after a start without a mark file (pg_upgrade, a restore without the file,
// its removal), the highest timestamp this server issued is unknown. The first
// snowflake_nextval() in each database then raises the generator above the highest key of every
// column whose default calls it, one max() (an index probe on a key) per column, so that ids
// issued from then on never repeat a key already stored. README "Upgrading PostgreSQL" says what
// it covers and what it cannot.
//
// Locking. keys_floor_pending is written once, at start-up. The list of databases already
// checked is read and extended under mark_lock; the probe itself runs without it, so two
// backends of one database may both probe, which only raises the floor twice to the same value.

extern "C" {
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_authid.h"
#include "commands/dbcommands.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"
}

#include <algorithm>

#include "core/codec.hpp"
#include "core/generator.hpp"
#include "pg/shared_state.hpp"

namespace {

// One statement per column whose default calls snowflake_nextval(): the column's max(). Plain
// and partitioned tables; a partition is covered by its parent, a foreign table lives elsewhere
// and another session's temporary table cannot be read. Run with search_path pinned.
constexpr char kKeyColumnsQuery[] =
    "SELECT pg_catalog.format('SELECT pg_catalog.max(%I) FROM %s', a.attname, "
    "c.oid::pg_catalog.regclass) "
    "FROM pg_catalog.pg_depend AS dep "
    "JOIN pg_catalog.pg_attrdef AS def ON def.oid = dep.objid "
    "JOIN pg_catalog.pg_class AS c ON c.oid = def.adrelid "
    "JOIN pg_catalog.pg_attribute AS a ON a.attrelid = def.adrelid AND a.attnum = def.adnum "
    "WHERE dep.classid = 'pg_catalog.pg_attrdef'::pg_catalog.regclass "
    "AND dep.refclassid = 'pg_catalog.pg_proc'::pg_catalog.regclass "
    "AND dep.refobjid = $1 "
    "AND c.relkind IN ('r', 'p') AND NOT c.relispartition AND c.relpersistence <> 't' "
    "AND a.atttypid = 'pg_catalog.int8'::pg_catalog.regtype";

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
// correct.
void remember_database_checked(SnowflakeShared *shared) {
    LWLockAcquire(shared->mark_lock, LW_EXCLUSIVE);
    if (shared->checked_database_count < kMaxCheckedDatabases) {
        shared->checked_databases[shared->checked_database_count++] = MyDatabaseId;
    }
    LWLockRelease(shared->mark_lock);
}

struct KeyProbe {
    int columns;
    int64 highest_key;  // -1 when no column holds a key
};

// The probes read every such table whatever the caller may read, so they run as the bootstrap
// superuser in a security-restricted operation with search_path pinned, the way PostgreSQL runs
// index expressions during maintenance; an error undoes both with the transaction.
KeyProbe probe_highest_key(Oid nextval_oid) {
    Oid saved_user;
    int saved_security_context;
    GetUserIdAndSecContext(&saved_user, &saved_security_context);
    SetUserIdAndSecContext(BOOTSTRAP_SUPERUSERID, saved_security_context |
                                                      SECURITY_LOCAL_USERID_CHANGE |
                                                      SECURITY_RESTRICTED_OPERATION);
    const int guc_nest_level = NewGUCNestLevel();
    (void)set_config_option("search_path", "pg_catalog, pg_temp", PGC_SUSET, PGC_S_SESSION,
                            GUC_ACTION_SAVE, true, 0, false);

    KeyProbe probe{0, -1};
    SPI_connect();
    Oid argument_types[1] = {OIDOID};
    Datum arguments[1] = {ObjectIdGetDatum(nextval_oid)};
    if (SPI_execute_with_args(kKeyColumnsQuery, 1, argument_types, arguments, nullptr, true, 0) !=
        SPI_OK_SELECT) {
        elog(ERROR, "snowflake: could not list the columns whose default is snowflake_nextval()");
    }
    SPITupleTable *statements = SPI_tuptable;
    const uint64 statement_count = SPI_processed;
    for (uint64 i = 0; i < statement_count; i++) {
        const char *statement = SPI_getvalue(statements->vals[i], statements->tupdesc, 1);
        if (SPI_execute(statement, true, 1) != SPI_OK_SELECT || SPI_processed != 1) {
            elog(ERROR, "snowflake: could not read the highest key: %s", statement);
        }
        bool is_null = true;
        const Datum highest =
            SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &is_null);
        if (!is_null) {
            probe.highest_key =
                std::max(probe.highest_key, static_cast<int64>(DatumGetInt64(highest)));
        }
        probe.columns++;
    }
    SPI_finish();

    AtEOXact_GUC(true, guc_nest_level);
    SetUserIdAndSecContext(saved_user, saved_security_context);
    return probe;
}

// Raises the generator through the key's millisecond. While nothing newer is issued, a clock up
// to a lease behind that millisecond is waited out like the rest of a lease; further behind, it
// is refused like any clock step back.
void raise_floor_through_key(SnowflakeShared *shared, int64 key) {
    const snowflake::DecodeResult decoded = snowflake::decode(key);
    if (decoded.status != snowflake::CodecStatus::kOk) {
        return;
    }
    const int64 through_unix_ms = decoded.parts.unix_ms;
    const snowflake::LastIssued last = snowflake::last_issued(shared->generator);
    if (last.any && last.unix_ms >= through_unix_ms) {
        return;
    }
    snowflake::raise_floor(shared->generator, through_unix_ms);
    int64 lease_floor = shared->lease_floor_ms.load(std::memory_order_relaxed);
    while (lease_floor < through_unix_ms &&
           !shared->lease_floor_ms.compare_exchange_weak(lease_floor, through_unix_ms,
                                                         std::memory_order_relaxed)) {
    }
}

}  // namespace

void snowflake_check_database_keys(SnowflakeShared *shared, Oid nextval_oid) {
    if (database_already_checked(shared)) {
        return;
    }
    const KeyProbe probe = probe_highest_key(nextval_oid);
    if (probe.highest_key >= 0) {
        raise_floor_through_key(shared, probe.highest_key);
    }
    remember_database_checked(shared);
    const char *database = get_database_name(MyDatabaseId);
    if (probe.highest_key < 0) {
        ereport(LOG, (errmsg("snowflake: no keys to raise the generator above in database \"%s\" "
                             "(%d columns whose default is snowflake_nextval())",
                             database, probe.columns)));
        return;
    }
    const snowflake::DecodeResult decoded = snowflake::decode(probe.highest_key);
    ereport(LOG,
            (errmsg("snowflake: raised the generator above key %lld in database \"%s\"",
                    static_cast<long long>(probe.highest_key), database),
             errdetail("It is the highest key of %d columns whose default is snowflake_nextval(); "
                       "its timestamp is %s. Ids issued from now on are above it.",
                       probe.columns,
                       timestamptz_to_str(snowflake::pg_us_from_unix_ms(decoded.parts.unix_ms)))));
}
