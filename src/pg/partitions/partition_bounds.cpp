// Reading partition bounds from pg_class.relpartbound as nodes, and the function
// snowflake_partition_ranges() (version 1.8) that the view snowflake_partition_reach reads them
// through, so that maintenance and monitoring read a bound alike: MINVALUE and MAXVALUE, a
// default partition, a partition that is itself partitioned.

extern "C" {
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_partitioned_table.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "partitioning/partdefs.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"
}

#include "core/codec.hpp"
#include "core/partition_plan.hpp"
#include "pg/library_objects.hpp"
#include "pg/partitions/partition_bounds.hpp"

extern "C" {
PG_FUNCTION_INFO_V1(snowflake_partition_ranges);
}

namespace {

// The largest hash modulus whose remainders are checked one by one; above it a sub-partitioned
// partition is not counted as taking rows.
constexpr int32 kMaxCheckedModulus = 65536;

// The partition's bound as the catalog holds it, or nullptr for a relation that is no partition.
PartitionBoundSpec *bound_spec(Oid partition) {
    HeapTuple tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(partition));
    if (!HeapTupleIsValid(tuple)) {
        return nullptr;
    }
    bool is_null = true;
    const Datum bound = SysCacheGetAttr(RELOID, tuple, Anum_pg_class_relpartbound, &is_null);
    auto *spec =
        is_null ? nullptr : castNode(PartitionBoundSpec, stringToNode(TextDatumGetCString(bound)));
    ReleaseSysCache(tuple);
    return spec;
}

// A range bound's first value; false for MINVALUE or MAXVALUE.
bool bound_value(List *datums, int64 *value) {
    const auto *datum = castNode(PartitionRangeDatum, linitial(datums));
    if (datum->kind != PARTITION_RANGE_DATUM_VALUE) {
        return false;
    }
    *value = DatumGetInt64(castNode(Const, datum->value)->constvalue);
    return true;
}

// The strategy a partitioned table routes by ('r', 'l' or 'h'), or 0 if it is not partitioned.
char partition_strategy(Oid table) {
    HeapTuple tuple = SearchSysCache1(PARTRELID, ObjectIdGetDatum(table));
    if (!HeapTupleIsValid(tuple)) {
        return 0;
    }
    const char strategy = reinterpret_cast<Form_pg_partitioned_table>(GETSTRUCT(tuple))->partstrat;
    ReleaseSysCache(tuple);
    return strategy;
}

// Whether a table is partitioned by range on one column of type bigint or snowflake, the only
// keys whose bounds are Snowflake ids (a bound of another type is no int64 at all).
bool is_keyed_by_id(Oid table, Oid snowflake_type) {
    HeapTuple tuple = SearchSysCache1(PARTRELID, ObjectIdGetDatum(table));
    if (!HeapTupleIsValid(tuple)) {
        return false;
    }
    const auto *form = reinterpret_cast<Form_pg_partitioned_table>(GETSTRUCT(tuple));
    const bool one_column = form->partstrat == PARTITION_STRATEGY_RANGE && form->partnatts == 1 &&
                            form->partattrs.values[0] != InvalidAttrNumber;
    const AttrNumber column = one_column ? form->partattrs.values[0] : InvalidAttrNumber;
    ReleaseSysCache(tuple);
    if (!one_column) {
        return false;
    }
    const Oid type = get_atttype(table, column);
    return type == INT8OID || (OidIsValid(snowflake_type) && type == snowflake_type);
}

// A timestamptz of Unix milliseconds.
Datum timestamp_of_ms(int64 unix_ms) {
    return TimestampTzGetDatum(snowflake::pg_us_from_unix_ms(unix_ms));
}

}  // namespace

// A default partition reads as one without bounds: it takes every row no other partition takes.
bool read_partition_bounds(Oid partition, PartitionBounds *bounds) {
    const PartitionBoundSpec *spec = bound_spec(partition);
    if (spec == nullptr) {
        return false;
    }
    *bounds = PartitionBounds{spec->is_default, false, 0, false, 0};
    if (spec->is_default) {
        return true;
    }
    if (spec->strategy != PARTITION_STRATEGY_RANGE) {
        return false;
    }
    bounds->has_lower = bound_value(spec->lowerdatums, &bounds->lower);
    bounds->has_upper = bound_value(spec->upperdatums, &bounds->upper);
    return true;
}

// Children whose bound is not a range partition's (none, for a table partitioned by range) are
// left out.
int read_range_partitions(Oid parent, RangePartition **partitions) {
    List *children = find_inheritance_children(parent, NoLock);
    *partitions = static_cast<RangePartition *>(
        palloc0(sizeof(RangePartition) * (list_length(children) + 1)));
    int count = 0;
    ListCell *cell = nullptr;
    foreach (cell, children) {
        RangePartition &partition = (*partitions)[count];
        partition.relation = lfirst_oid(cell);
        if (read_partition_bounds(partition.relation, &partition.bounds)) {
            count++;
        }
    }
    return count;
}

// Each level of a partition tree is read from the catalog; a deep tree is bounded by the stack.
bool partition_takes_rows(Oid partition) {
    check_stack_depth();
    if (get_rel_relkind(partition) != RELKIND_PARTITIONED_TABLE) {
        return true;
    }
    List *children = find_inheritance_children(partition, NoLock);
    auto *hash_bounds = static_cast<snowflake::HashBound *>(
        palloc(sizeof(snowflake::HashBound) * (list_length(children) + 1)));
    size_t hash_count = 0;
    bool has_default = false;
    ListCell *cell = nullptr;
    foreach (cell, children) {
        const Oid child = lfirst_oid(cell);
        const PartitionBoundSpec *spec = bound_spec(child);
        if (spec == nullptr) {
            continue;
        }
        if (!partition_takes_rows(child)) {
            return false;
        }
        has_default = has_default || spec->is_default;
        if (spec->strategy == PARTITION_STRATEGY_HASH) {
            hash_bounds[hash_count++] = {spec->modulus, spec->remainder};
        }
    }
    return has_default ||
           (partition_strategy(partition) == PARTITION_STRATEGY_HASH &&
            snowflake::hash_bounds_cover(hash_bounds, hash_count, kMaxCheckedModulus));
}

// One row per partition of a table partitioned by range on its Snowflake key (none for another
// table): its bounds (NULL for MINVALUE or MAXVALUE, both for a default partition), the time its
// ids span whole (-infinity, infinity) and whether it takes rows. Read from the catalog without a
// lock, as monitoring should.
extern "C" Datum snowflake_partition_ranges(PG_FUNCTION_ARGS) {
    InitMaterializedSRF(fcinfo, 0);
    const auto *result = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);
    const Oid parent = PG_GETARG_OID(0);
    if (!is_keyed_by_id(parent, snowflake_id_type_beside(fcinfo->flinfo->fn_oid))) {
        return static_cast<Datum>(0);
    }
    RangePartition *partitions = nullptr;
    const int count = read_range_partitions(parent, &partitions);
    for (int p = 0; p < count; p++) {
        const Oid child = partitions[p].relation;
        const PartitionBounds &bounds = partitions[p].bounds;
        Datum values[6];
        bool nulls[6] = {};
        int i = 0;
        values[i++] = ObjectIdGetDatum(child);
        nulls[i] = !bounds.has_lower;
        values[i++] = Int64GetDatum(bounds.lower);
        nulls[i] = !bounds.has_upper;
        values[i++] = Int64GetDatum(bounds.upper);
        values[i++] = bounds.has_lower ? timestamp_of_ms(snowflake::first_whole_ms(bounds.lower))
                                       : TimestampTzGetDatum(DT_NOBEGIN);
        values[i++] = bounds.has_upper ? timestamp_of_ms(snowflake::end_ms(bounds.upper))
                                       : TimestampTzGetDatum(DT_NOEND);
        values[i++] = BoolGetDatum(partition_takes_rows(child));
        Assert(i == 6);
        tuplestore_putvalues(result->setResult, result->setDesc, values, nulls);
    }
    return static_cast<Datum>(0);
}
