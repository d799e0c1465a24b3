// snowflake_partition_table() and snowflake_maintain_partitions() (version 1.7), the procedure
// snowflake_run_partition_maintenance() and snowflake_partition_boundaries() (version 1.8): time
// partitions of a table range-partitioned on its Snowflake key, kept ahead of the clock and
// trimmed by a retention. doc/reference.md "Time partitions" says what they do; doc/design.md
// "Time partitions" says why they are C and which locks they take.
//
// The caller must have the privileges of the table's owner, checked before anything is locked.
// Every statement that touches the table (reading its keys, CREATE TABLE, ATTACH, DETACH, DROP)
// runs as the table's owner in a security-restricted operation with search_path pinned
// (as_owner.hpp), so that no code of the owner (a CHECK, an index expression, a trigger) runs with
// the caller's rights. The setup is a row of the configuration table snowflake_partitioned_tables,
// written as that table's owner (the extension's), whom no role's code reaches. The boundaries
// are computed by PostgreSQL (date_trunc in the time zone, + interval); the rules over them are
// the core's (core/partition_plan.hpp).

extern "C" {
#include "postgres.h"

#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "partitioning/partdefs.h"
#include "pgtime.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/partcache.h"
#include "utils/resowner.h"
#include "utils/rel.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"
}

#include <cstring>

#include "core/codec.hpp"
#include "core/mark_rules.hpp"
#include "core/partition_plan.hpp"
#include "pg/as_owner.hpp"
#include "pg/clock.hpp"
#include "pg/id_bounds.hpp"
#include "pg/library_objects.hpp"
#include "pg/object_names.hpp"
#include "pg/compat.hpp"
#include "pg/partitions/partition_bounds.hpp"
#include "pg/partitions/partition_clock.hpp"
#include "pg/partitions/partition_setups.hpp"
#include "pg/partitions/table_time_limit.hpp"

extern "C" {
PG_FUNCTION_INFO_V1(snowflake_partition_table);
PG_FUNCTION_INFO_V1(snowflake_maintain_partitions);
PG_FUNCTION_INFO_V1(snowflake_run_partition_maintenance);
PG_FUNCTION_INFO_V1(snowflake_partition_boundaries);
}

namespace {

using snowflake::IdRange;
using snowflake::PartitionUnit;

// More boundaries than this (over 11 years of hours) means a mistaken interval or start.
constexpr int kMaxBoundaries = 100000;

// The helper constraint that lets ATTACH PARTITION skip its scan; dropped once attached.
constexpr char kBoundsConstraint[] = "snowflake_partition_bounds";

// The extension's schema and the objects of it that the statements name.
struct Extension {
    const char *schema;  // quoted
    Oid snowflake_type;  // InvalidOid before version 1.6
    Oid config_table;
    const char *config_table_text;  // qualified and quoted
};

// A table's setup, as the configuration table holds it.
struct Setup {
    Oid parent;
    Datum every;
    PartitionUnit unit;
    int ahead;
    bool has_retain;
    Datum retain;
    const char *time_zone;
    bool drop_expired;
};

// An attached partition and its range.
struct Partition {
    Oid relation;
    IdRange range;
};

// The report: one row per thing done (or one saying nothing was due).
struct Report {
    Tuplestorestate *store;
    TupleDesc tupdesc;
    const char *function_name;
};

// Runs one statement of a table's maintenance as the table's owner; with row_security off for a
// read that must see every row. Returns the row count.
uint64 run_as_owner(const Report &report, Oid owner, const char *statement, int argument_count,
                    Oid *argument_types, Datum *arguments, const char *nulls, bool see_every_row) {
    return run_statement_as({owner, report.function_name, statement, see_every_row}, statement,
                            argument_count, argument_types, arguments, nulls);
}

// The extension's schema and objects, read as the caller (the catalog is public).
Extension find_extension() {
    if (SPI_execute("SELECT pg_catalog.quote_ident(n.nspname), n.oid FROM pg_catalog.pg_extension "
                    "AS e JOIN pg_catalog.pg_namespace AS n ON n.oid = e.extnamespace WHERE "
                    "e.extname = 'snowflake'",
                    true, 0) != SPI_OK_SELECT ||
        SPI_processed == 0) {
        elog(ERROR, "snowflake: the extension is not installed in this database");
    }
    Extension extension;
    extension.schema = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
    bool is_null = true;
    const Oid namespace_oid =
        DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &is_null));
    extension.snowflake_type =
        GetSysCacheOid2(TYPENAMENSP, Anum_pg_type_oid, CStringGetDatum("snowflake"),
                        ObjectIdGetDatum(namespace_oid));
    extension.config_table =
        snowflake_extension_table(namespace_oid, "snowflake_partitioned_tables");
    if (!OidIsValid(extension.config_table)) {
        elog(ERROR, "snowflake: the configuration table snowflake_partitioned_tables is missing");
    }
    extension.config_table_text = qualified_table_text(extension.config_table);
    return extension;
}

// Whether a type lives in a temporary schema, and goes with its session.
bool is_temporary_type(Oid type) {
    HeapTuple tuple = SearchSysCache1(TYPEOID, ObjectIdGetDatum(type));
    if (!HeapTupleIsValid(tuple)) {
        return false;
    }
    const Oid schema = reinterpret_cast<Form_pg_type>(GETSTRUCT(tuple))->typnamespace;
    ReleaseSysCache(tuple);
    return isAnyTempNamespace(schema);
}

// Whether a column of the table is of a temporary type (dropped columns have none).
bool has_column_of_temporary_type(Oid relation, int column_count) {
    for (AttrNumber column = 1; column <= column_count; column++) {
        if (is_temporary_type(get_atttype(relation, column))) {
            return true;
        }
    }
    return false;
}

// The table, checked and locked: the caller must have the privileges of its owner (checked
// before the lock, so that a stranger cannot lock it, and again once it is held). Its
// ShareUpdateExclusiveLock conflicts with itself, so maintenance of one table is serialised, and
// not with inserts, updates or deletes. Without wait, a table another session holds is left
// (false), so that a call over many tables never waits while it holds locks on others.
bool lock_parent(Oid relation, const char *function_name, bool wait) {
    for (int attempt = 0; attempt < 2; attempt++) {
        HeapTuple tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relation));
        if (!HeapTupleIsValid(tuple)) {
            ereport(ERROR,
                    (errcode(ERRCODE_UNDEFINED_TABLE),
                     errmsg("table with OID %u does not exist", relation),
                     errhint("Name the table: SELECT * FROM %.*s('events', ...).",
                             static_cast<int>(strlen(function_name)) - 2, function_name)));
        }
        const auto *form = reinterpret_cast<Form_pg_class>(GETSTRUCT(tuple));
        const Oid owner = form->relowner;
        const char kind = form->relkind;
        const bool is_partition = form->relispartition;
        const bool is_temporary = form->relpersistence == RELPERSISTENCE_TEMP ||
                                  is_temporary_type(form->reloftype) ||
                                  has_column_of_temporary_type(relation, form->relnatts);
        ReleaseSysCache(tuple);
        if (!has_privs_of_role(GetUserId(), owner)) {
            ereport(ERROR,
                    (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
                     errmsg("must be owner of table %s", table_text(relation)),
                     errhint("Run %s as the table's owner, or as a member of the owner's role.",
                             function_name)));
        }
        if (is_temporary) {
            ereport(ERROR,
                    (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                     errmsg("%s is a temporary table, or is typed by or has a column of a "
                            "temporary type",
                            table_text(relation)),
                     errdetail("It goes with its session, unseen by the event trigger that "
                               "removes a dropped table's setup, and maintenance runs in other "
                               "sessions."),
                     errhint("Partition a permanent or unlogged table of permanent types.")));
        }
        if (kind != RELKIND_PARTITIONED_TABLE || is_partition) {
            ereport(ERROR,
                    (errcode(ERRCODE_WRONG_OBJECT_TYPE),
                     errmsg("%s is not a partitioned table", table_text(relation)),
                     errhint("Create it with PARTITION BY RANGE (id) on its bigint or snowflake "
                             "key, then call %s.",
                             function_name)));
        }
        if (attempt == 0 && wait) {
            LockRelationOid(relation, ShareUpdateExclusiveLock);
        } else if (attempt == 0 &&
                   !ConditionalLockRelationOid(relation, ShareUpdateExclusiveLock)) {
            return false;
        }
    }
    return true;
}

// The partition key: a single bigint or snowflake column, by range. Returns its number.
AttrNumber read_key(Oid parent, const Extension &extension) {
    Relation table = table_open(parent, NoLock);
    PartitionKey key = RelationGetPartitionKey(table);
    const bool by_range = get_partition_strategy(key) == PARTITION_STRATEGY_RANGE;
    const bool one_column = get_partition_natts(key) == 1;
    const AttrNumber attnum = one_column ? get_partition_col_attnum(key, 0) : InvalidAttrNumber;
    const Oid key_type = one_column ? get_partition_col_typid(key, 0) : InvalidOid;
    table_close(table, NoLock);
    const bool key_type_fits = key_type == INT8OID || (OidIsValid(extension.snowflake_type) &&
                                                       key_type == extension.snowflake_type);
    if (!by_range || attnum == InvalidAttrNumber || !key_type_fits) {
        ereport(ERROR,
                (errcode(ERRCODE_INVALID_TABLE_DEFINITION),
                 errmsg("%s is not partitioned by range on one bigint or snowflake column",
                        table_text(parent)),
                 errdetail("Its partitions are made from snowflake_min_id() of their start, which "
                           "bounds a Snowflake key only."),
                 errhint("Partition it with PARTITION BY RANGE (id), where id is the key fed by "
                         "snowflake_nextval().")));
    }
    return attnum;
}

// Refuses a table with a default partition: ATTACH of a new range would scan it under lock, and
// a row in it inside the new range would make the ATTACH fail.
void refuse_default_partition(Oid parent, Oid partition) {
    ereport(ERROR,
            (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
             errmsg("%s has a default partition, %s", table_text(parent), table_text(partition)),
             errdetail("Attaching each new partition would scan the default partition while "
                       "holding a lock that blocks inserts, and a row of it inside the new range "
                       "would make the attach fail."),
             errhint("Move its rows into range partitions and detach it (ALTER TABLE %s DETACH "
                     "PARTITION %s), then call the function again.",
                     table_text(parent), table_text(partition))));
}

// Refuses a partition that does not span one period between consecutive boundaries.
void refuse_misaligned(const Setup &setup, Oid partition, const char *bounds) {
    ereport(ERROR,
            (errcode(ERRCODE_INVALID_TABLE_DEFINITION),
             errmsg("partition %s of %s does not line up with the %s boundaries in time zone %s",
                    table_text(partition), table_text(setup.parent),
                    snowflake::partition_unit_name(setup.unit), setup.time_zone),
             errdetail("Its bounds are %s; each partition must span one %s, FROM "
                       "(snowflake_min_id(start)) TO (snowflake_min_id(start + interval)).",
                       bounds, snowflake::partition_unit_name(setup.unit)),
             errhint("Detach it (ALTER TABLE %s DETACH PARTITION %s), or set the table up with "
                     "the interval and time zone its partitions were made with.",
                     table_text(setup.parent), table_text(partition))));
}

// The attached partitions and their ranges, from the catalog (no role's code runs).
Partition *read_partitions(const Setup &setup, int *count) {
    RangePartition *ranges = nullptr;
    *count = read_range_partitions(setup.parent, &ranges);
    auto *partitions = static_cast<Partition *>(palloc0(sizeof(Partition) * (*count + 1)));
    for (int i = 0; i < *count; i++) {
        const Oid child = ranges[i].relation;
        const PartitionBounds &bounds = ranges[i].bounds;
        if (bounds.is_default) {
            refuse_default_partition(setup.parent, child);
        }
        if (!bounds.has_lower || !bounds.has_upper || bounds.lower < 0) {
            refuse_misaligned(setup, child, "MINVALUE, MAXVALUE or a negative id");
        }
        partitions[i] = Partition{child, IdRange{bounds.lower, bounds.upper}};
    }
    return partitions;
}

// The boundaries, computed by PostgreSQL in the table's time zone as its owner: from the period
// of the id first_id to the end of the period ahead periods after the one that holds now, or to
// the id last_id if that is later (a partition made further ahead). Months, weeks and days start
// at local midnight, counted on the local calendar from the first (a day of 23 or 25 hours, a
// month of 28 to 31 days; where midnight does not exist, the day starts when the clock jumps past
// it); hours start where the local clock shows minute 0, found on a quarter-hour grid of absolute
// time, so that they last an hour wherever the offset changes by whole hours, and 90 minutes
// across a change of half an hour (Australia/Lord_Howe). Both depend only on the instant, never
// on where the series began, so that boundaries computed after the retention has removed the
// oldest partitions are those computed before. Fills each boundary's first id and the fields
// that name the period it starts; returns how many, or -1 where they would be more than
// kMaxBoundaries.
int compute_boundaries(const Report &report, const Extension &extension, const Setup &setup,
                       Oid owner, int64 first_id, int64 last_id, TimestampTz now,
                       int64 **boundary_ids, snowflake::PeriodStart **starts) {
    const char *series =
        setup.unit == PartitionUnit::kHour
            ? "SELECT b, b AT TIME ZONE 'UTC' FROM pg_catalog.generate_series("
              "pg_catalog.date_trunc('hour', %s.snowflake_timestamp($1), 'UTC') "
              "- interval '2 hours', "
              "GREATEST(pg_catalog.date_trunc('hour', $2, 'UTC') + ($6 + 3) * $5, "
              "%s.snowflake_timestamp($7)), interval '15 minutes') AS b "
              "WHERE pg_catalog.date_part('minute', b AT TIME ZONE $3) OPERATOR(pg_catalog.=) 0"
            : "SELECT l AT TIME ZONE $3, l FROM pg_catalog.generate_series("
              "pg_catalog.date_trunc($4, %s.snowflake_timestamp($1) AT TIME ZONE $3), "
              "GREATEST(pg_catalog.date_trunc($4, $2 AT TIME ZONE $3) + ($6 + 1) * $5, "
              "%s.snowflake_timestamp($7) AT TIME ZONE $3), $5) AS l";
    char *statement = psprintf(
        "SELECT %s.snowflake_min_id(q.b), pg_catalog.date_part('year', q.l)::int, "
        "pg_catalog.date_part('month', q.l)::int, pg_catalog.date_part('day', q.l)::int, "
        "pg_catalog.date_part('hour', q.l)::int, pg_catalog.date_part('isoyear', q.l)::int, "
        "pg_catalog.date_part('week', q.l)::int FROM (%s) AS q(b, l) ORDER BY 1 LIMIT %d",
        extension.schema, psprintf(series, extension.schema, extension.schema), kMaxBoundaries + 1);
    Oid types[7] = {INT8OID, TIMESTAMPTZOID, TEXTOID, TEXTOID, INTERVALOID, INT4OID, INT8OID};
    Datum values[7] = {Int64GetDatum(first_id),
                       TimestampTzGetDatum(now),
                       CStringGetTextDatum(setup.time_zone),
                       CStringGetTextDatum(snowflake::partition_unit_name(setup.unit)),
                       setup.every,
                       Int32GetDatum(setup.ahead),
                       Int64GetDatum(last_id)};
    const uint64 rows = run_as_owner(report, owner, statement, 7, types, values, nullptr, false);
    if (rows > static_cast<uint64>(kMaxBoundaries)) {
        return -1;
    }
    *boundary_ids = static_cast<int64 *>(palloc(sizeof(int64) * rows));
    *starts = static_cast<snowflake::PeriodStart *>(palloc(sizeof(snowflake::PeriodStart) * rows));
    for (uint64 i = 0; i < rows; i++) {
        HeapTuple row = SPI_tuptable->vals[i];
        const TupleDesc description = SPI_tuptable->tupdesc;
        bool is_null = true;
        (*boundary_ids)[i] = DatumGetInt64(SPI_getbinval(row, description, 1, &is_null));
        int fields[6];
        for (int f = 0; f < 6; f++) {
            fields[f] = DatumGetInt32(SPI_getbinval(row, description, f + 2, &is_null));
        }
        (*starts)[i] = {fields[0], fields[1], fields[2], fields[3], fields[4], fields[5]};
    }
    return static_cast<int>(rows);
}

// Refuses a table whose boundaries would be too many. Where the clock lies outside the span of
// its partitions, and the span alone would fit, the clock is what is far, and is named first.
void refuse_too_many_boundaries(const Report &report, const Extension &extension,
                                const Setup &setup, Oid owner, const Partition *partitions,
                                int count) {
    const TimestampTz now = GetCurrentTransactionStartTimestamp();
    const int64 now_id = snowflake_min_id_at(now);
    IdRange span{PG_INT64_MAX, 0};
    for (int i = 0; i < count; i++) {
        span.lower = Min(span.lower, partitions[i].range.lower);
        span.upper = Max(span.upper, partitions[i].range.upper);
    }
    int64 *boundaries = nullptr;
    snowflake::PeriodStart *starts = nullptr;
    if (count > 0 && (now_id < span.lower || now_id >= span.upper) &&
        compute_boundaries(report, extension, setup, owner, span.lower, span.upper,
                           snowflake::pg_us_from_unix_ms(snowflake::first_whole_ms(span.lower)),
                           &boundaries, &starts) >= 0) {
        refuse_clock_far(setup.parent, kMaxBoundaries, now, span);
    }
    ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
                    errmsg("%s would need more than %d partition boundaries",
                           table_text(setup.parent), kMaxBoundaries),
                    errhint("Its oldest key, or a partition far back or far ahead of the others, "
                            "is too far from the rest for this interval: detach that partition, "
                            "or choose a longer interval.")));
}

// One row of the report.
void add_row(const Report &report, Oid parent, const char *partition, const char *action) {
    Datum values[3] = {ObjectIdGetDatum(parent),
                       partition == nullptr ? Datum(0) : CStringGetTextDatum(partition),
                       CStringGetTextDatum(action)};
    bool nulls[3] = {false, partition == nullptr, false};
    tuplestore_putvalues(report.store, report.tupdesc, values, nulls);
}

// The name of the partition of the period that starts at start: the parent's name and the
// period's suffix; where both do not fit in a name, the parent's name is cut and followed by a
// tag of its whole name, so that two parents beginning alike never share a partition name.
char *partition_name(const Setup &setup, const snowflake::PeriodStart &start) {
    char suffix[snowflake::kPartitionSuffixSize];
    const int suffix_length =
        static_cast<int>(snowflake::partition_suffix(setup.unit, start, suffix, sizeof(suffix)));
    const char *parent_name = get_rel_name(setup.parent);
    const int parent_length = static_cast<int>(strlen(parent_name));
    if (parent_length + suffix_length <= NAMEDATALEN - 1) {
        return psprintf("%s%s", parent_name, suffix);
    }
    char tag[snowflake::kPartitionNameTagSize];
    snowflake::partition_name_tag(parent_name, static_cast<size_t>(parent_length), tag,
                                  sizeof(tag));
    const int base_length =
        pg_mbcliplen(parent_name, parent_length,
                     NAMEDATALEN - 1 - suffix_length - static_cast<int>(strlen(tag)));
    return psprintf("%.*s%s%s", base_length, parent_name, tag, suffix);
}

// Refuses, before anything is created, a partition name that a relation of the parent's schema
// already has (a table of the owner's, or another parent's partition whose tag collides).
void refuse_taken_name(const Setup &setup, const char *name) {
    const Oid schema = get_rel_namespace(setup.parent);
    if (!OidIsValid(get_relname_relid(name, schema))) {
        return;
    }
    const char *qualified =
        psprintf("%s.%s", quote_identifier(get_namespace_name(schema)), quote_identifier(name));
    ereport(ERROR,
            (errcode(ERRCODE_DUPLICATE_TABLE),
             errmsg("the partition %s of %s cannot be created: a relation of that name exists",
                    qualified, table_text(setup.parent)),
             errdetail("%s is not a partition of %s, and nothing was created or detached.",
                       qualified, table_text(setup.parent)),
             errhint("Rename or drop %s, or attach it if it spans that period, then call the "
                     "function again.",
                     qualified)));
}

// Creates the partition of one period as a table of its own (its owner's, in the parent's schema)
// with a CHECK of its bounds, attaches it (ShareUpdateExclusiveLock on the parent: inserts go on;
// the CHECK spares the scan), then drops the CHECK. Returns its name.
char *create_partition(const Report &report, const Setup &setup, Oid owner, AttrNumber key_attnum,
                       int64 lower, int64 upper, const char *name) {
    const char *parent_name = get_rel_name(setup.parent);
    const char *schema = quote_identifier(get_namespace_name(get_rel_namespace(setup.parent)));
    char *qualified = psprintf("%s.%s", schema, quote_identifier(name));
    const char *parent = psprintf("%s.%s", schema, quote_identifier(parent_name));
    const char *key = quote_identifier(get_attname(setup.parent, key_attnum, false));
    // bigint's comparisons, which compare a snowflake key through its binary cast as well.
    run_as_owner(
        report, owner,
        psprintf("CREATE TABLE %s (LIKE %s INCLUDING DEFAULTS INCLUDING CONSTRAINTS "
                 "INCLUDING GENERATED INCLUDING STORAGE INCLUDING COMPRESSION, "
                 "CONSTRAINT %s CHECK (%s IS NOT NULL AND %s OPERATOR(pg_catalog.>=) "
                 "'" INT64_FORMAT "'::pg_catalog.int8 AND %s OPERATOR(pg_catalog.<) '" INT64_FORMAT
                 "'::pg_catalog.int8))",
                 qualified, parent, kBoundsConstraint, key, key, lower, key, upper),
        0, nullptr, nullptr, nullptr, false);
    run_as_owner(report, owner,
                 psprintf("ALTER TABLE %s ATTACH PARTITION %s FOR VALUES FROM ('" INT64_FORMAT
                          "') TO ('" INT64_FORMAT "')",
                          parent, qualified, lower, upper),
                 0, nullptr, nullptr, nullptr, false);
    run_as_owner(report, owner,
                 psprintf("ALTER TABLE %s DROP CONSTRAINT %s", qualified, kBoundsConstraint), 0,
                 nullptr, nullptr, nullptr, false);
    return qualified;
}

// Detaches (and drops, if the setup says so) the partitions whose whole range ends at least the
// retention before both now and the newest key, unless a gap in the partitions (gap) lies between
// them and the current period: their bounds hold no newer key, so none is read from them. The
// newest key is read only when the clock would expire a partition. Those kept are reported, with
// a warning where the clock puts even the newest key beyond the retention, or where a gap keeps
// them.
bool trim_partitions(const Report &report, const Setup &setup, Oid owner, AttrNumber key_attnum,
                     const Partition *partitions, int count, const snowflake::SeriesGap &gap) {
    const TimestampTz now = GetCurrentTransactionStartTimestamp();
    const int64 clock_start = retention_start_id(now, setup.retain);
    bool due = false;
    for (int i = 0; i < count; i++) {
        due = due || snowflake::is_expired(partitions[i].range, clock_start);
    }
    if (!due) {
        return false;
    }
    // The newest key must be read whole; where a policy applies to the owner, it cannot be.
    if (retention_hidden_by_policies(setup.parent, owner)) {
        add_row(report, setup.parent, nullptr,
                "retention skipped (row-level security applies to the table's owner)");
        return true;
    }
    int64 newest_key = 0;
    const bool has_key = read_key_end(setup.parent, owner, key_attnum, report.function_name,
                                      KeyEnd::kNewest, &newest_key);
    const snowflake::RetentionBasis basis = snowflake::retention_basis(now, has_key, newest_key);
    const int64 retention_start =
        basis.is_newest_key ? retention_start_id(basis.pg_us, setup.retain) : clock_start;
    int held_back = 0;
    int before_gap = 0;
    for (int i = 0; i < count; i++) {
        const snowflake::Expiry expiry =
            snowflake::expiry_of(partitions[i].range, clock_start, retention_start, gap);
        if (expiry == snowflake::Expiry::kKept) {
            continue;
        }
        if (expiry == snowflake::Expiry::kBeforeGap) {
            add_row(report, setup.parent, table_text(partitions[i].relation),
                    kept_before_gap(gap, setup.time_zone));
            before_gap++;
            continue;
        }
        if (expiry == snowflake::Expiry::kHeldBack) {
            add_row(report, setup.parent, table_text(partitions[i].relation),
                    "kept (older than the retention by the clock, not by the newest key)");
            held_back++;
            continue;
        }
        const char *partition = table_text(partitions[i].relation);
        run_as_owner(
            report, owner,
            psprintf("ALTER TABLE %s DETACH PARTITION %s", table_text(setup.parent), partition), 0,
            nullptr, nullptr, nullptr, false);
        if (setup.drop_expired) {
            run_as_owner(report, owner, psprintf("DROP TABLE %s", partition), 0, nullptr, nullptr,
                         nullptr, false);
            add_row(report, setup.parent, partition,
                    "detached and dropped (older than the retention)");
        } else {
            add_row(report, setup.parent, partition, "detached (older than the retention)");
        }
    }
    if (held_back > 0 && newest_key < clock_start) {
        warn_held_back(setup.parent, held_back, now, newest_key);
    }
    if (before_gap > 0) {
        warn_kept_before_gap(setup.parent, before_gap, gap, setup.time_zone,
                             snowflake::partition_unit_name(setup.unit));
    }
    return true;
}

// Brings one locked table up to its setup: checks its partitions against the boundaries, adopts
// them (at setup), creates the missing ones from the current period (at setup: from the period of
// the oldest key) to ahead periods past it, and trims by the retention, never across a gap that
// the partitions, with those just created, leave before the current period.
void maintain_table(const Report &report, const Extension &extension, const Setup &setup,
                    bool at_setup) {
    // A clock outside the layout has no partition: the call fails as an id would, naming it.
    const int64 now_unix_ms =
        snowflake::unix_ms_floor_from_pg_us(GetCurrentTransactionStartTimestamp());
    if (!snowflake::clock_in_layout(now_unix_ms)) {
        snowflake_report_clock_out_of_range(now_unix_ms);
    }
    const Oid owner = owner_of(setup.parent);
    const AttrNumber key_attnum = read_key(setup.parent, extension);
    int count = 0;
    const Partition *partitions = read_partitions(setup, &count);
    const int64 now_id = snowflake_min_id_at(GetCurrentTransactionStartTimestamp());
    int64 create_from = now_id;
    if (at_setup) {
        int64 oldest_key = 0;
        if (read_key_end(setup.parent, owner, key_attnum, report.function_name, KeyEnd::kOldest,
                         &oldest_key) &&
            oldest_key >= 0 && oldest_key < create_from) {
            create_from = oldest_key;
        }
    }
    int64 first_id = create_from;
    int64 last_id = now_id;
    for (int i = 0; i < count; i++) {
        first_id = Min(first_id, partitions[i].range.lower);
        last_id = Max(last_id, partitions[i].range.upper);
    }
    int64 *boundaries = nullptr;
    snowflake::PeriodStart *starts = nullptr;
    const int boundary_count =
        compute_boundaries(report, extension, setup, owner, first_id, last_id,
                           GetCurrentTransactionStartTimestamp(), &boundaries, &starts);
    if (boundary_count < 0) {
        refuse_too_many_boundaries(report, extension, setup, owner, partitions, count);
    }
    auto *ranges = static_cast<IdRange *>(palloc(sizeof(IdRange) * (count + 1)));
    for (int i = 0; i < count; i++) {
        ranges[i] = partitions[i].range;
    }
    const snowflake::RangeCheck check = snowflake::check_ranges(
        ranges, static_cast<size_t>(count), boundaries, static_cast<size_t>(boundary_count));
    if (check.fit != snowflake::RangeFit::kAligned) {
        const IdRange &range = ranges[check.culprit];
        refuse_misaligned(
            setup, partitions[check.culprit].relation,
            psprintf("FROM (" INT64_FORMAT ") TO (" INT64_FORMAT ")", range.lower, range.upper));
    }
    bool did_something = false;
    if (at_setup) {
        for (int i = 0; i < count; i++) {
            add_row(report, setup.parent, table_text(partitions[i].relation), "adopted");
            did_something = true;
        }
    }
    // From the period of create_from through ahead periods past the current one.
    const auto boundary_total = static_cast<size_t>(boundary_count);
    const size_t first_period = snowflake::period_of(boundaries, boundary_total, create_from);
    const size_t current_period = snowflake::period_of(boundaries, boundary_total, now_id);
    const size_t end_period = current_period + 1 + static_cast<size_t>(setup.ahead);
    bool *missing = static_cast<bool *>(palloc0(sizeof(bool) * boundary_count));
    snowflake::missing_periods(ranges, static_cast<size_t>(count), boundaries, boundary_total,
                               first_period, end_period, missing);
    // Past the layout's end (July 2080) a period holds no id: its bounds are both the largest.
    for (int period = 0; period + 1 < boundary_count; period++) {
        missing[period] = missing[period] && boundaries[period] < boundaries[period + 1];
    }
    // Every name is chosen and checked before the first partition is created.
    char **names = static_cast<char **>(palloc0(sizeof(char *) * boundary_count));
    for (int period = 0; period + 1 < boundary_count; period++) {
        if (missing[period]) {
            names[period] = partition_name(setup, starts[period]);
            refuse_taken_name(setup, names[period]);
        }
    }
    for (int period = 0; period + 1 < boundary_count; period++) {
        if (missing[period]) {
            char *name = create_partition(report, setup, owner, key_attnum, boundaries[period],
                                          boundaries[period + 1], names[period]);
            add_row(report, setup.parent, name, "created");
            did_something = true;
        }
    }
    if (setup.has_retain &&
        trim_partitions(
            report, setup, owner, key_attnum, partitions, count,
            gap_before_now(ranges, count, boundaries, boundary_count, missing, current_period))) {
        did_something = true;
    }
    if (!did_something) {
        add_row(report, setup.parent, nullptr, "nothing to do");
    }
}

// The setup of a table from the configuration table, read once its lock is held and with a new
// snapshot (not read-only), so that a setup committed while the lock was awaited is the one
// applied; false if it has none.
bool read_setup(const Extension &extension, Oid parent, Setup *setup) {
    Oid types[1] = {OIDOID};
    Datum values[1] = {ObjectIdGetDatum(parent)};
    if (SPI_execute_with_args(
            psprintf("SELECT every, ahead, retain, time_zone, drop_expired FROM %s WHERE "
                     "parent::pg_catalog.oid OPERATOR(pg_catalog.=) $1",
                     extension.config_table_text),
            1, types, values, nullptr, false, 0) != SPI_OK_SELECT) {
        elog(ERROR, "snowflake: could not read snowflake_partitioned_tables");
    }
    if (SPI_processed == 0) {
        return false;
    }
    HeapTuple row = SPI_tuptable->vals[0];
    const TupleDesc description = SPI_tuptable->tupdesc;
    bool is_null = true;
    setup->parent = parent;
    setup->every = datumCopy(SPI_getbinval(row, description, 1, &is_null), false, sizeof(Interval));
    const Interval *every = DatumGetIntervalP(setup->every);
    if (!snowflake::partition_unit_of(every->month, every->day, every->time, &setup->unit)) {
        ereport(ERROR,
                (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                 errmsg("the setup of %s in snowflake_partitioned_tables has an interval that is "
                        "not 1 hour, 1 day, 1 week or 1 month",
                        table_text(parent)),
                 errhint("Set the table up again with snowflake_partition_table() rather than "
                         "writing the configuration table.")));
    }
    setup->ahead = DatumGetInt32(SPI_getbinval(row, description, 2, &is_null));
    const Datum retain = SPI_getbinval(row, description, 3, &is_null);
    setup->has_retain = !is_null;
    setup->retain = is_null ? Datum(0) : datumCopy(retain, false, sizeof(Interval));
    setup->time_zone = SPI_getvalue(row, description, 4);
    setup->drop_expired = DatumGetBool(SPI_getbinval(row, description, 5, &is_null));
    return true;
}

// Opens the report: the rows the function returns, kept in a tuplestore.
Report open_report(FunctionCallInfo fcinfo, const char *function_name) {
    InitMaterializedSRF(fcinfo, 0);
    const auto *result_info = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);
    return Report{result_info->setResult, result_info->setDesc, function_name};
}

// Refuses a transaction that cannot maintain partitions, before anything is done: a read-only one
// or a standby's (every call may create, detach or drop partitions, and write its setup), and a
// REPEATABLE READ or SERIALIZABLE one (the partitions must be read as they are once the lock is
// held).
void refuse_unfit_transaction(const char *function_name) {
    if (RecoveryInProgress()) {
        ereport(ERROR, (errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
                        errmsg("%s cannot run on a standby", function_name),
                        errhint("Run it on the primary: the partitions it makes reach the "
                                "standbys with the WAL.")));
    }
    if (XactReadOnly) {
        ereport(ERROR, (errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
                        errmsg("%s cannot run in a read-only transaction", function_name),
                        errhint("Run it in a read-write transaction: BEGIN READ WRITE, or SET "
                                "default_transaction_read_only = off first.")));
    }
    if (IsolationUsesXactSnapshot()) {
        ereport(ERROR, (errcode(ERRCODE_INVALID_TRANSACTION_STATE),
                        errmsg("%s cannot run in a REPEATABLE READ or SERIALIZABLE transaction",
                               function_name),
                        errhint("Run it in a READ COMMITTED transaction (the default).")));
    }
}

// The names of pg_timezone_names, read once per backend (reading them loads every zone's file)
// and again when a name is not among them, so that a zone added to the server's time zone data
// since is found.
HTAB *zone_names = nullptr;

// Reads every name of pg_timezone_names into zone_names.
void read_zone_names() {
    if (zone_names == nullptr) {
        HASHCTL control{};
        control.keysize = TZ_STRLEN_MAX + 1;
        control.entrysize = TZ_STRLEN_MAX + 1;
        zone_names =
            hash_create("snowflake time zone names", 1024, &control, HASH_ELEM | HASH_STRINGS);
    }
    if (SPI_execute("SELECT name FROM pg_catalog.pg_timezone_names", true, 0) != SPI_OK_SELECT) {
        elog(ERROR, "snowflake: could not read pg_timezone_names");
    }
    for (uint64 i = 0; i < SPI_processed; i++) {
        const char *name = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1);
        if (name != nullptr && strlen(name) <= TZ_STRLEN_MAX) {
            (void)hash_search(zone_names, name, HASH_ENTER, nullptr);
        }
    }
}

// Whether the time zone is a name of pg_timezone_names.
bool is_zone_name(const char *time_zone) {
    if (strlen(time_zone) > TZ_STRLEN_MAX) {
        return false;
    }
    for (int attempt = 0; attempt < 2; attempt++) {
        if (zone_names != nullptr && hash_search(zone_names, time_zone, HASH_FIND, nullptr)) {
            return true;
        }
        if (attempt == 0) {
            read_zone_names();
        }
    }
    return false;
}

// Refuses a time zone that is not a name of pg_timezone_names: only a zone's name means the same
// in every session (an abbreviation depends on the session's timezone_abbreviations, and a POSIX
// offset such as UTC+99 on no rule at all).
void refuse_unnamed_zone(const char *time_zone) {
    if (!is_zone_name(time_zone)) {
        ereport(ERROR,
                (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                 errmsg("time zone \"%s\" is not the name of a time zone", time_zone),
                 errhint("Name one of pg_timezone_names, such as 'UTC' or 'Europe/Berlin': an "
                         "abbreviation or an offset would align the partitions differently in "
                         "another session.")));
    }
}

// The unit of an interval argument, refused unless it is one hour, day, week or month.
PartitionUnit unit_of_argument(Datum every, const char *function_name) {
    const Interval *interval = DatumGetIntervalP(every);
    PartitionUnit unit = PartitionUnit::kMonth;
    if (!snowflake::partition_unit_of(interval->month, interval->day, interval->time, &unit)) {
        ereport(ERROR,
                (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                 errmsg("%s partitions by one hour, day, week or month, not %s", function_name,
                        DatumGetCString(DirectFunctionCall1(interval_out, every))),
                 errhint("Pass '1 hour', '1 day', '1 week' or '1 month'.")));
    }
    return unit;
}

}  // namespace

// Sets a table up for time partitions and brings it up to date at once (doc/reference.md).
extern "C" Datum snowflake_partition_table(PG_FUNCTION_ARGS) {
    constexpr char kName[] = "snowflake_partition_table()";
    if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2) || PG_ARGISNULL(4) ||
        PG_ARGISNULL(5)) {
        ereport(ERROR,
                (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
                 errmsg("%s needs a table, an interval, a count ahead and a time zone", kName),
                 errhint("Call it as snowflake_partition_table('events', '1 month').")));
    }
    refuse_unfit_transaction(kName);
    const Report report = open_report(fcinfo, kName);
    Setup setup;
    setup.parent = PG_GETARG_OID(0);
    setup.every = PG_GETARG_DATUM(1);
    setup.unit = unit_of_argument(setup.every, kName);
    setup.ahead = PG_GETARG_INT32(2);
    if (setup.ahead < 0 || setup.ahead > 1000) {
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("ahead must be between 0 and 1000, not %d", setup.ahead),
                        errhint("Pass how many partitions past the current one to keep, such as "
                                "3.")));
    }
    setup.has_retain = !PG_ARGISNULL(3);
    setup.retain = setup.has_retain ? PG_GETARG_DATUM(3) : Datum(0);
    if (setup.has_retain) {
        const Interval *retain = PG_GETARG_INTERVAL_P(3);
        if (retain->month < 0 || retain->day < 0 || retain->time < 0 ||
            (retain->month == 0 && retain->day == 0 && retain->time == 0)) {
            ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                            errmsg("retain must be a positive interval"),
                            errhint("Pass how long to keep rows, such as '12 months', or NULL to "
                                    "keep every partition.")));
        }
    }
    setup.time_zone = text_to_cstring(PG_GETARG_TEXT_PP(4));
    setup.drop_expired = PG_GETARG_BOOL(5);

    const int guc_nest_level = pin_search_path();
    SPI_connect();
    const Extension extension = find_extension();
    lock_parent(setup.parent, kName, true);
    refuse_unnamed_zone(setup.time_zone);
    Oid types[6] = {OIDOID, INTERVALOID, INT4OID, INTERVALOID, TEXTOID, BOOLOID};
    Datum values[6] = {ObjectIdGetDatum(setup.parent),       setup.every,
                       Int32GetDatum(setup.ahead),           setup.retain,
                       CStringGetTextDatum(setup.time_zone), BoolGetDatum(setup.drop_expired)};
    const char nulls[7] = {' ', ' ', ' ', setup.has_retain ? ' ' : 'n', ' ', ' ', '\0'};
    // The table's old setup goes as every removal of a setup goes, and the new one is inserted,
    // which no publication of the configuration table can fail (remove_setups()).
    remove_setups(extension.config_table, setup.parent);
    run_as_owner(report, owner_of(extension.config_table),
                 psprintf("INSERT INTO %s (parent, every, ahead, retain, time_zone, "
                          "drop_expired) VALUES ($1::pg_catalog.regclass, $2, $3, $4, $5, $6)",
                          extension.config_table_text),
                 6, types, values, nulls, false);
    maintain_table(report, extension, setup, true);
    SPI_finish();
    unpin_search_path(guc_nest_level);
    return static_cast<Datum>(0);
}

// One named table: its lock awaited, an error the caller's.
void maintain_named_table(const Report &report, const Extension &extension, Oid parent,
                          const char *function_name) {
    lock_parent(parent, function_name, true);
    Setup setup;
    if (!read_setup(extension, parent, &setup)) {
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("%s is not set up for time partitions", table_text(parent)),
                        errhint("Set it up first: SELECT * FROM snowflake_partition_table('%s', "
                                "'1 month').",
                                table_text(parent))));
    }
    maintain_table(report, extension, setup, false);
}

// How long maintenance of every table waits for a lock of one of them.
constexpr char kManyTablesLockTimeout[] = "1s";

// How long maintenance of every table gives one of them (table_time_limit.hpp).
constexpr int kManyTablesTimeLimitMs = 10000;

// One of every table set up, in a subtransaction of its own: a table another session holds is
// left for the next call rather than awaited (the call may hold locks on tables it has
// maintained), and a table whose maintenance fails is reported, with a warning, and rolled back
// alone, so that no owner's table stops the maintenance of the others; a cancel ends the call.
void maintain_one_of_many(const Report &report, const Extension &extension, Oid parent,
                          const char *function_name) {
    const MemoryContext context = CurrentMemoryContext;
    const ResourceOwner owner = CurrentResourceOwner;
    // This table's rows, kept apart until its subtransaction commits.
    const Report table_report{tuplestore_begin_heap(false, false, work_mem), report.tupdesc,
                              report.function_name};
    BeginInternalSubTransaction(nullptr);
    MemoryContextSwitchTo(context);
    volatile bool maintained = false;
    // Ended once on whichever path leaves the table: its starts and ends nest.
    volatile bool limit_running = true;
    start_table_time_limit(kManyTablesTimeLimitMs);
    PG_TRY();
    {
        // A lock this table's steps wait for (a partition's, or the parent's for a DETACH, which
        // waits for its inserts) is awaited for a second at most: the DETACH of an earlier table
        // keeps that table's inserts out until the transaction ends.
        const int guc_nest_level = NewGUCNestLevel();
        (void)set_config_option("lock_timeout", kManyTablesLockTimeout, PGC_USERSET, PGC_S_SESSION,
                                GUC_ACTION_SAVE, true, 0, false);
        Setup setup;
        // A table dropped since the tables were listed has nothing left to maintain.
        const bool exists = SearchSysCacheExists1(RELOID, ObjectIdGetDatum(parent));
        if (exists && !lock_parent(parent, function_name, false)) {
            add_row(table_report, parent, nullptr, "skipped: locked by another session");
        } else if (exists && read_setup(extension, parent, &setup)) {
            maintain_table(table_report, extension, setup, false);
        }
        AtEOXact_GUC(false, guc_nest_level);
        limit_running = false;
        end_table_time_limit();
        ReleaseCurrentSubTransaction();
        maintained = true;
    }
    PG_CATCH();
    {
        if (limit_running) {
            end_table_time_limit();
        }
        MemoryContextSwitchTo(context);
        ErrorData *error = CopyErrorData();
        FlushErrorState();
        RollbackAndReleaseCurrentSubTransaction();
        MemoryContextSwitchTo(context);
        CurrentResourceOwner = owner;
        // A cancel or statement_timeout is the caller's, not this table's: it ends the call. Only
        // one that the server raised, and not for this table's time limit, so that the owner's
        // code cannot end the maintenance of the tables after hers by raising query_canceled
        // itself, nor by running past the limit.
        const bool interrupted = error->sqlerrcode == ERRCODE_QUERY_CANCELED &&
                                 error->funcname != nullptr &&
                                 strcmp(error->funcname, "ProcessInterrupts") == 0;
        const bool over_time = interrupted && cancel_was_time_limit(error);
        if (interrupted && !over_time) {
            ReThrowError(error);
        }
        if (over_time) {
            error->message = psprintf(
                "took longer than %d s, the limit of one table in the maintenance of every table",
                kManyTablesTimeLimitMs / 1000);
        }
        // A table dropped since the tables were listed has nothing left to maintain.
        const bool dropped = error->sqlerrcode == ERRCODE_UNDEFINED_TABLE &&
                             !SearchSysCacheExists1(RELOID, ObjectIdGetDatum(parent));
        if (!dropped) {
            ereport(WARNING,
                    (errcode(error->sqlerrcode),
                     errmsg("time partitions of %s were not maintained: %s", table_text(parent),
                            error->message),
                     errhint("Call snowflake_maintain_partitions('%s') to see the whole error "
                             "(it maintains that table alone, without a time limit); the other "
                             "tables were maintained.",
                             table_text(parent))));
            add_row(report, parent, nullptr, psprintf("failed: %s", error->message));
        }
        FreeErrorData(error);
    }
    PG_END_TRY();
    // Its rows join the report once its subtransaction is committed, outside the catch, which
    // could not undo a subtransaction that is no longer open.
    if (maintained) {
        MemoryContextSwitchTo(context);
        CurrentResourceOwner = owner;
        TupleTableSlot *slot = MakeSingleTupleTableSlot(report.tupdesc, &TTSOpsMinimalTuple);
        while (tuplestore_gettupleslot(table_report.store, true, false, slot)) {
            tuplestore_puttupleslot(report.store, slot);
        }
        ExecDropSingleTupleTableSlot(slot);
    }
    tuplestore_end(table_report.store);
}

// Every table set up whose owner's privileges the caller has, in OID order; first the rows whose
// table is gone are removed, which the event trigger misses where event triggers do not fire
// (single-user mode, event_triggers off, a temporary table dropped as its session ends).
Oid *list_tables_to_maintain(const Extension &extension, int *count) {
    remove_setups(extension.config_table, InvalidOid);
    if (SPI_execute(psprintf("SELECT t.parent::pg_catalog.oid FROM %s AS t JOIN "
                             "pg_catalog.pg_class AS c ON c.oid OPERATOR(pg_catalog.=) "
                             "t.parent::pg_catalog.oid WHERE pg_catalog.pg_has_role(c.relowner, "
                             "'USAGE') AND c.relpersistence OPERATOR(pg_catalog.<>) 't' ORDER BY 1",
                             extension.config_table_text),
                    true, 0) != SPI_OK_SELECT) {
        elog(ERROR, "snowflake: could not read snowflake_partitioned_tables");
    }
    *count = static_cast<int>(SPI_processed);
    auto *parents = static_cast<Oid *>(palloc(sizeof(Oid) * (*count + 1)));
    for (int i = 0; i < *count; i++) {
        bool is_null = true;
        parents[i] = DatumGetObjectId(
            SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &is_null));
    }
    return parents;
}

// Brings one table, or every table set up that the caller may maintain, up to its setup.
extern "C" Datum snowflake_maintain_partitions(PG_FUNCTION_ARGS) {
    constexpr char kName[] = "snowflake_maintain_partitions()";
    refuse_unfit_transaction(kName);
    const Report report = open_report(fcinfo, kName);
    const int guc_nest_level = pin_search_path();
    SPI_connect();
    const Extension extension = find_extension();
    Oid *parents = nullptr;
    int parent_count = 0;
    if (!PG_ARGISNULL(0)) {
        parents = static_cast<Oid *>(palloc(sizeof(Oid)));
        parents[0] = PG_GETARG_OID(0);
        parent_count = 1;
    } else {
        parents = list_tables_to_maintain(extension, &parent_count);
    }
    if (!PG_ARGISNULL(0)) {
        maintain_named_table(report, extension, parents[0], kName);
    }
    for (int i = 0; PG_ARGISNULL(0) && i < parent_count; i++) {
        maintain_one_of_many(report, extension, parents[i], kName);
    }
    SPI_finish();
    unpin_search_path(guc_nest_level);
    return static_cast<Datum>(0);
}

// The lock that keeps one role's runs of the procedure in this database from overlapping: an
// advisory lock that no SQL function can take (pg_locks shows it with classid the configuration
// table's OID, objid the role's and objsubid 3, where pg_advisory_lock() uses 1 and 2), so that
// no role can hold it to keep another role's scheduled runs from maintaining anything.
constexpr uint16 kRunLockKind = 3;
LOCKTAG run_lock(const Extension &extension) {
    LOCKTAG tag;
    SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, extension.config_table, GetUserId(), kRunLockKind);
    return tag;
}

// The report's row as a notice, since a procedure returns no rows.
void notify_row(TupleTableSlot *slot) {
    slot_getallattrs(slot);
    const char *parent = table_text(DatumGetObjectId(slot->tts_values[0]));
    const char *action = TextDatumGetCString(slot->tts_values[2]);
    if (slot->tts_isnull[1]) {
        ereport(NOTICE, (errmsg("%s: %s", parent, action)));
    } else {
        ereport(NOTICE,
                (errmsg("%s: %s %s", parent, action, TextDatumGetCString(slot->tts_values[1]))));
    }
}

// The report's columns, as snowflake_maintain_partitions() returns them.
TupleDesc report_columns() {
    TupleDesc columns = CreateTemplateTupleDesc(3);
    TupleDescInitEntry(columns, 1, "parent", REGCLASSOID, -1, 0);
    TupleDescInitEntry(columns, 2, "partition", TEXTOID, -1, 0);
    TupleDescInitEntry(columns, 3, "action", TEXTOID, -1, 0);
    snowflake_finalize_tuple_desc(columns);
    return columns;
}

// Maintains every table set up that the caller may maintain, each table in a transaction of its
// own, as snowflake_maintain_partitions() maintains one of many: the DETACH of one table keeps its
// inserts out only until that table's commit, and a table another session holds costs the run
// about a second (lock_timeout) and no other table anything (doc/reference.md "Scheduling").
extern "C" Datum snowflake_run_partition_maintenance(PG_FUNCTION_ARGS) {
    constexpr char kName[] = "snowflake_run_partition_maintenance()";
    const auto *call = reinterpret_cast<const CallContext *>(fcinfo->context);
    if (call == nullptr || !IsA(call, CallContext) || call->atomic) {
        ereport(ERROR,
                (errcode(ERRCODE_ACTIVE_SQL_TRANSACTION),
                 errmsg("%s commits after each table and cannot run inside a transaction block "
                        "or a function",
                        kName),
                 errhint("CALL it on its own, or use SELECT * FROM "
                         "snowflake_maintain_partitions() inside a transaction.")));
    }
    refuse_unfit_transaction(kName);
    SPI_connect_ext(SPI_OPT_NONATOMIC);
    // Pinned for this first transaction's reads, and again in each table's: a commit ends it.
    int guc_nest_level = pin_search_path();
    const Extension extension = find_extension();
    const LOCKTAG lock = run_lock(extension);
    if (LockAcquire(&lock, ExclusiveLock, true, true) == LOCKACQUIRE_NOT_AVAIL) {
        ereport(NOTICE,
                (errmsg("%s did nothing: another run of it by role %s is in progress in this "
                        "database",
                        kName, quote_identifier(GetUserNameFromId(GetUserId(), false))),
                 errhint("Leave the tables to that run; pg_locks shows the session that holds "
                         "its advisory lock.")));
        unpin_search_path(guc_nest_level);
        SPI_finish();
        PG_RETURN_VOID();
    }
    const TupleDesc columns = report_columns();
    const MemoryContext run_memory = CurrentMemoryContext;
    PG_TRY();
    {
        int parent_count = 0;
        const Oid *parents = list_tables_to_maintain(extension, &parent_count);
        unpin_search_path(guc_nest_level);
        SPI_commit();
        for (int i = 0; i < parent_count; i++) {
            // This table's allocations, freed once it is committed.
            const MemoryContext table_memory = AllocSetContextCreate(
                run_memory, "snowflake table maintenance", ALLOCSET_DEFAULT_SIZES);
            MemoryContextSwitchTo(table_memory);
            guc_nest_level = pin_search_path();
            const Report report{tuplestore_begin_heap(false, false, work_mem), columns, kName};
            maintain_one_of_many(report, extension, parents[i], kName);
            TupleTableSlot *slot = MakeSingleTupleTableSlot(columns, &TTSOpsMinimalTuple);
            while (tuplestore_gettupleslot(report.store, true, false, slot)) {
                notify_row(slot);
            }
            ExecDropSingleTupleTableSlot(slot);
            tuplestore_end(report.store);
            unpin_search_path(guc_nest_level);
            SPI_commit();
            MemoryContextSwitchTo(run_memory);
            MemoryContextDelete(table_memory);
        }
    }
    PG_CATCH();
    {
        // A session lock outlives the transaction's abort: released here, or no later run of
        // this role would start while the session lasts.
        LockRelease(&lock, ExclusiveLock, true);
        PG_RE_THROW();
    }
    PG_END_TRY();
    LockRelease(&lock, ExclusiveLock, true);
    SPI_finish();
    PG_RETURN_VOID();
}

// The timestamptz of a boundary's first id.
Datum boundary_time(int64 id) {
    return TimestampTzGetDatum(snowflake::pg_us_from_unix_ms(snowflake::decode(id).parts.unix_ms));
}

// The periods that snowflake_partition_table() would make for an interval and a time zone from
// the one that holds since through the one that holds until, computed as maintenance computes
// them, so that a boundary can be checked (or a setup foreseen) without a table.
extern "C" Datum snowflake_partition_boundaries(PG_FUNCTION_ARGS) {
    constexpr char kName[] = "snowflake_partition_boundaries()";
    Setup setup{};
    setup.every = PG_GETARG_DATUM(0);
    setup.unit = unit_of_argument(setup.every, kName);
    setup.time_zone = text_to_cstring(PG_GETARG_TEXT_PP(1));
    const TimestampTz since = PG_GETARG_TIMESTAMPTZ(2);
    const TimestampTz until = PG_GETARG_TIMESTAMPTZ(3);
    if (TIMESTAMP_NOT_FINITE(since) || TIMESTAMP_NOT_FINITE(until) || until < since) {
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("%s needs finite times, since no later than until", kName),
                        errhint("Pass since and until such as now() and now() + interval "
                                "'1 year'.")));
    }
    InitMaterializedSRF(fcinfo, 0);
    const auto *result = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);
    const int guc_nest_level = pin_search_path();
    SPI_connect();
    const Extension extension = find_extension();
    refuse_unnamed_zone(setup.time_zone);
    const int64 first_id =
        snowflake::min_id_at_or_after(snowflake::unix_ms_floor_from_pg_us(since));
    const int64 last_id = snowflake::min_id_at_or_after(snowflake::unix_ms_floor_from_pg_us(until));
    // Two periods past until, so that the series holds the end of the period that holds it.
    const TimestampTz series_end = DatumGetTimestampTz(
        DirectFunctionCall2(timestamptz_pl_interval, TimestampTzGetDatum(until),
                            DirectFunctionCall2(interval_mul, setup.every, Float8GetDatum(2.0))));
    const int64 series_end_id =
        snowflake::min_id_at_or_after(snowflake::unix_ms_floor_from_pg_us(series_end));
    int64 *boundaries = nullptr;
    snowflake::PeriodStart *starts = nullptr;
    const Report report{nullptr, nullptr, kName};
    const int count = compute_boundaries(report, extension, setup, GetUserId(), first_id,
                                         series_end_id, since, &boundaries, &starts);
    if (count < 0) {
        ereport(ERROR,
                (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
                 errmsg("%s would need more than %d partition boundaries", kName, kMaxBoundaries),
                 errhint("Ask for a shorter span of time, or a longer interval.")));
    }
    for (int period = 0; period + 1 < count; period++) {
        if (boundaries[period + 1] <= first_id ||
            (boundaries[period] >= last_id && boundaries[period] > first_id)) {
            continue;
        }
        char suffix[snowflake::kPartitionSuffixSize];
        (void)snowflake::partition_suffix(setup.unit, starts[period], suffix, sizeof(suffix));
        Datum values[3];
        bool nulls[3] = {};
        int i = 0;
        values[i++] = boundary_time(boundaries[period]);
        values[i++] = boundary_time(boundaries[period + 1]);
        values[i++] = CStringGetTextDatum(suffix);
        Assert(i == 3);
        tuplestore_putvalues(result->setResult, result->setDesc, values, nulls);
    }
    SPI_finish();
    unpin_search_path(guc_nest_level);
    return static_cast<Datum>(0);
}
