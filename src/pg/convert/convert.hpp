// The conversion's parts, shared by its three layers: following the key's paths
// (key_paths.cpp), the refusals that judge them before anything changes (refusals.cpp), and the
// steps that change them (convert.cpp, which says in what order). Include after postgres.h and
// the headers of the types below.
#pragma once

namespace snowflake_convert {

inline constexpr char kFunctionName[] = "snowflake_convert_column()";

// A column that holds the key's values: the key itself, a column of a partition or inheritance
// child of a table in the set, or a column whose foreign key references one in the set.
struct KeyColumn {
    Oid relation;
    AttrNumber attnum;
    Oid type;
    Oid root;                // the table whose ALTER TABLE changes this column
    AttrNumber root_attnum;  // the column's number there
    bool tree_followed;      // its root's partitions and children are in the set
};

// A foreign key through which the key's values reach a column of the set.
struct Reference {
    Oid constraint;
    int column;  // index of the referencing column in KeyPaths::columns
};

// Every path the key's values can take, in the order found; columns[0] is the key.
struct KeyPaths {
    KeyColumn *columns;
    int count;
    int capacity;
    Reference *references;
    int reference_count;
    int reference_capacity;
    Oid target;          // the type the columns become: bigint, or the snowflake type
    Oid snowflake_type;  // the extension's snowflake type, InvalidOid before version 1.6
};

// The catalog facts of the key column, read after its table is locked.
struct KeyFacts {
    const char *column_text;  // table.column as the messages show it
    Oid owner;
    Oid type;
    char identity;
    const char *default_expression;  // nullptr without a default
    bool fed_by_snowflake_nextval;   // DEFAULT snowflake_nextval() already: the default is kept
};

// Runs a query as the current user (search_path is pinned) and returns its row count. It reads
// with the latest snapshot, not the calling statement's: that one was taken before the locks
// were waited for, and would miss a foreign key or a key committed meanwhile. ALTER TABLE
// rewrites with the latest too.
uint64 run_query(const char *statement, int argument_count, Oid *argument_types, Datum *arguments,
                 bool read_only);

// The first column of the first row of the last query as text, or nullptr for NULL or no row.
char *first_text();

// A column as the messages and the report show it: table.column, quoted as needed.
char *column_text(Oid relation, AttrNumber attnum);

// A role's name, for the messages that say whose table is in the way.
char *role_text(Oid role);

// The parents of a table, in the order of its INHERITS or its partition parent.
inline constexpr char kParentsQuery[] =
    "SELECT inhparent FROM pg_catalog.pg_inherits WHERE inhrelid = $1 ORDER BY inhseqno";

// The error of a key whose paths hold tables or domains of other roles than its owner: raised by
// refuse_mixed_owners once every table is locked, and while the paths are followed, before each
// lock, by the check that keeps a stranger from locking another role's table.
[[noreturn]] void report_mixed_owners(const char *key_text, Oid owner, const char *others);

// Follows every path of the key's values from columns[0]: up to the table that alters each
// column, down to every partition and inheritance child, and along every foreign key that
// references a column of the set (a chain of keys included). Each table is locked in ACCESS
// EXCLUSIVE mode, as ALTER TABLE would lock it, before its references are read.
KeyPaths follow_key(Oid relation, AttrNumber attnum);

// The types that cannot hold a Snowflake id and are widened.
bool is_small_integer(Oid type);

// Whether the column is widened: smallint and integer are; bigint and domains over it are kept.
// A widened column's CHECK constraints can be judged only once it is bigint or snowflake.
bool is_widened(const KeyColumn &column);

// Whether ALTER TABLE changes the column's type: to bigint the smaller integers; to snowflake
// bigint too. Domains and columns already of the type are kept.
bool is_retyped(const KeyPaths &paths, const KeyColumn &column);

// Whether the conversion is to the snowflake type (the overload with a type, version 1.6).
bool to_snowflake(const KeyPaths &paths);

// A column of a type other than smallint, integer, bigint, snowflake or a domain over bigint or
// snowflake cannot carry new ids, and a domain over a smaller integer cannot be widened with its
// constraints kept.
void refuse_unwidenable_types(const KeyPaths &paths, const char *key_text);

// The index of a column in the set, or -1.
int find_column(const KeyPaths &paths, Oid relation, AttrNumber attnum);

// Whether a column of the set is the key itself or its copy in a partition or child.
bool is_key_column(const KeyPaths &paths, const KeyColumn &column);

// Every table on the paths must have the key's owner. Widening a column makes PostgreSQL
// validate each foreign key on it again, with a query on the tables at both ends that runs as
// the role running the ALTER TABLE, and the planner runs immutable functions of those tables'
// partial indexes and statistics; a partition's constraints run as its parent's owner. With one
// owner, each ALTER TABLE runs as that owner and no other role's code runs with its rights
// (the foreign keys that leave the paths are refused by refuse_outgoing_keys).
void refuse_mixed_owners(const KeyPaths &paths, const char *key_text);

// A key that references another table could take no new id (the id would not be there), and a
// widened column that references a column off the paths would leave that column too small and
// make PostgreSQL check its foreign key on a table the conversion does not hold.
void refuse_outgoing_keys(const KeyPaths &paths, const char *key_text);

// Inserts could fail and the conversion could not judge them: a foreign table's remote column
// is not widened, and a column inherited from a parent off the key's tree cannot be changed
// without that parent.
void refuse_foreign_tables_and_other_parents(const KeyPaths &paths, const char *key_text);

// PostgreSQL cannot change the type of a column in a partition key; and where the column is one
// of several, or in an expression, the conversion cannot judge which partition takes a new id.
// Refused before anything changes, rather than by ALTER TABLE or by every insert afterwards.
void refuse_partition_keys(const KeyPaths &paths);

// One refusal naming all of them, rather than ALTER TABLE's error on the first.
void refuse_views_and_policies(const KeyPaths &paths, const char *key_text);

// The sequence that goes with the old feed, to name it and to drop it when nothing else uses it.
Oid owned_sequence(Oid relation, const char *column);

// What else uses the sequence, or nullptr: it is kept (or the identity refused) while anything
// does.
char *sequence_users(Oid sequence);

// Removing an identity drops its sequence, which another default may use: PostgreSQL would
// refuse and suggest a CASCADE that would drop that default.
void refuse_shared_identity(Oid relation, const char *column, const KeyFacts &key);

// Old keys must stay below every id the generator can issue from now on, unless the generator
// issued them (a key fed by snowflake_nextval() already), and none may be negative. The read sees
// every key (refuse_hidden_rows).
void refuse_keys_out_of_range(Oid relation, const char *column, const KeyFacts &key);

// Follows a new id down a table's tree as an INSERT would: into the one partition that accepts it
// when the table is partitioned by the column alone, into every partition otherwise (another
// column decides), and into every inheritance child (each takes new ids of its own); refuses when
// no partition accepts it or a constraint on the way rejects it. Each table is judged as its
// owner.
void refuse_unfit_tree(Oid table, const char *column, int64 id);

// A column, other than the key's, that one ALTER TABLE changes, with what the report says of it;
// read before anything changes (widening the key rebuilds the foreign keys under new oids).
struct Root {
    Oid relation;
    AttrNumber attnum;
    Oid type;
    const char *text;     // table.column
    const char *through;  // the foreign keys that reach it
};

// Each column another ALTER TABLE than the key's changes, once, with its report, before any change.
Root *referencing_roots(const KeyPaths &paths, int *count);

// The cast to snowflake refuses a negative value, which would fail the ALTER TABLE midway: each
// column that becomes snowflake is read first, with its partitions and children, as its owner
// (the key's own values are judged by refuse_keys_out_of_range). Only a foreign key that is NOT
// VALID, or a column of a child that takes its own values, can hold one.
void refuse_negative_values(const Root *roots, int root_count, const char *key_text);

}  // namespace snowflake_convert

// Installed by _PG_init: the warning when ALTER TABLE takes snowflake_nextval() away from a
// column's default (default_watch.cpp).
void snowflake_install_default_watch();
