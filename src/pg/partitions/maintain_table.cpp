// The maintenance of one locked table (maintain_table() below): its partitions read from the
// catalog and checked against the boundaries, those missing created and attached, and those
// older than the retention detached. Every statement runs as the table's owner (as_owner.hpp).

extern "C" {
#include "postgres.h"

#include "access/table.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "mb/pg_wchar.h"
#include "partitioning/partdefs.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/partcache.h"
#include "utils/rel.h"
#include "utils/timestamp.h"
}

#include "core/codec.hpp"
#include "core/mark_rules.hpp"
#include "core/partition_plan.hpp"
#include "pg/as_owner.hpp"
#include "pg/clock.hpp"
#include "pg/id_bounds.hpp"
#include "pg/object_names.hpp"
#include "pg/partitions/partition_bounds.hpp"
#include "pg/partitions/partition_clock.hpp"
#include "pg/partitions/partition_parts.hpp"

namespace {

using namespace snowflake_partitions;
using snowflake::IdRange;

// The helper constraint that lets ATTACH PARTITION skip its scan; dropped once attached.
constexpr char kBoundsConstraint[] = "snowflake_partition_bounds";

// An attached partition and its range.
struct Partition {
    Oid relation;
    IdRange range;
};

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

}  // namespace

namespace snowflake_partitions {

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

}  // namespace snowflake_partitions
