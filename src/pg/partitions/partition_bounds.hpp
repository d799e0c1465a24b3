// A partition's bounds and whether it takes rows, read from the catalog alone (no lock, no
// role's code): the one reading of bounds that maintenance (maintain_table.cpp) and the view
// snowflake_partition_reach (through snowflake_partition_ranges()) share. Include after
// postgres.h.
#pragma once

// A partition's bound as its parent routes rows by it.
struct PartitionBounds {
    bool is_default;
    bool has_lower;  // false: FROM (MINVALUE), or a default partition
    int64 lower;
    bool has_upper;  // false: TO (MAXVALUE), or a default partition
    int64 upper;
};

// The bound of a range partition on one column (of the first column, on several); false for a
// relation that is not a partition, or a partition by list or hash.
bool read_partition_bounds(Oid partition, PartitionBounds *bounds);

// A partition of a table partitioned by range, with its bound.
struct RangePartition {
    Oid relation;
    PartitionBounds bounds;
};

// The partitions of a table partitioned by range and their bounds, from the catalog alone (a
// partition being detached is left out, as the parent routes no row to it); returns how many.
int read_range_partitions(Oid parent, RangePartition **partitions);

// Whether a row routed to the partition finds a table to go into: a partition that is itself
// partitioned does only with a default partition or hash partitions for every remainder, and
// then only if each of its partitions does in turn.
bool partition_takes_rows(Oid partition);
