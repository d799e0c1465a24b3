// Time partitions of a table range-partitioned on its Snowflake key, kept ahead of the clock and
// trimmed by a retention: the parts that their files share (partition_common.cpp). The files are
// setting a table up (partition_setup.cpp), maintaining one table (maintain_table.cpp), the runs
// over one or many tables (maintenance_runs.cpp), the scheduled run (scheduled_run.cpp, with
// table_step.hpp) and the periods (partition_periods.cpp).
// doc/reference.md "Time partitions" says what they do; doc/design.md "Time partitions" says why
// they are C and which locks they take.
//
// The caller must have the privileges of the table's owner, checked before anything is locked.
// Every statement that touches the table (reading its keys, CREATE TABLE, ATTACH, DETACH, DROP)
// runs as the table's owner in a security-restricted operation with search_path pinned
// (as_owner.hpp), so that no code of the owner (a CHECK, an index expression, a trigger) runs with
// the caller's rights. The setup is a row of the configuration table snowflake_partitioned_tables,
// written as that table's owner (the extension's), whom no role's code reaches. The boundaries
// are computed by PostgreSQL (date_trunc in the time zone, + interval); the rules over them are
// the core's (core/partition_plan.hpp).
//
// Include after postgres.h, funcapi.h and core/partition_plan.hpp.
#pragma once

namespace snowflake_partitions {

// How long the maintenance of every table waits for a lock of one of them.
constexpr char kManyTablesLockTimeout[] = "1s";

// How long the maintenance of every table gives one of them: a time limit in the caller's session
// (table_time_limit.hpp), the end of the table's worker in a scheduled run (table_step.hpp).
constexpr int kManyTablesTimeLimitMs = 10000;

// More boundaries than this (over 11 years of hours) means a mistaken interval or start.
constexpr int kMaxBoundaries = 100000;

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
    snowflake::PartitionUnit unit;
    int ahead;
    bool has_retain;
    Datum retain;
    const char *time_zone;
    bool drop_expired;
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
                    Oid *argument_types, Datum *arguments, const char *nulls, bool see_every_row);

// The extension's schema and the objects of it that the statements name.
Extension find_extension();

// The table, checked and locked (partition_common.cpp says how); false where wait is false and
// another session holds it.
bool lock_parent(Oid relation, const char *function_name, bool wait);

// One row of the report.
void add_row(const Report &report, Oid parent, const char *partition, const char *action);

// The setup of a table from the configuration table; false if it has none.
bool read_setup(const Extension &extension, Oid parent, Setup *setup);

// Opens the report: the rows the function returns, kept in a tuplestore.
Report open_report(FunctionCallInfo fcinfo, const char *function_name);

// Refuses a transaction that cannot maintain partitions, before anything is done.
void refuse_unfit_transaction(const char *function_name);

// The unit of an interval argument, refused unless the core's table holds it.
snowflake::PartitionUnit unit_of_argument(Datum every, const char *function_name);

// Refuses a time zone that is not a name of pg_timezone_names (partition_periods.cpp).
void refuse_unnamed_zone(const char *time_zone);

// The boundaries of a table's periods, computed by PostgreSQL (partition_periods.cpp says how);
// -1 where they would be more than kMaxBoundaries.
int compute_boundaries(const Report &report, const Extension &extension, const Setup &setup,
                       Oid owner, int64 first_id, int64 last_id, TimestampTz now,
                       int64 **boundary_ids, snowflake::PeriodStart **starts);

// A table to maintain, and its owner.
struct ListedTable {
    Oid parent;
    Oid owner;
};

// Every table set up that the caller may maintain: in OID order, or, for a scheduled run, in
// turns of their owners (maintenance_runs.cpp).
ListedTable *list_tables_to_maintain(const Extension &extension, bool in_turns, int *count);

// The report's columns, as snowflake_maintain_partitions() returns them.
TupleDesc report_columns();

// Brings one locked table up to its setup (maintain_table.cpp).
void maintain_table(const Report &report, const Extension &extension, const Setup &setup,
                    bool at_setup);

}  // namespace snowflake_partitions
