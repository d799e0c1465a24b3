// The catalog queries of the read of one database's stored keys (keys_read.cpp): which columns
// may hold keys, whether a prepared transaction may hide one, and where snowflake_nextval() is.
#pragma once

// The columns that may hold keys, each as a table and its attribute number: a column whose
// default calls snowflake_nextval() (its own default, its type's, or an ancestor's, down every
// level of partitions and inheritance children; a snowflake column's default calls it inside the
// assignment cast, and pg_depend records every function a default calls), and every column that
// leads an index, since a table keeps its keys when its default goes (a detached partition, a
// default dropped or set elsewhere). Every kind of index counts (btree, hash, BRIN, and GiST or
// GIN through btree_gist or btree_gin): only a btree of the integer family is walked, and a
// column that another kind leads is read with its table. Whether the column is a bigint or a
// snowflake (or a domain over either) is checked once the table is locked. A foreign table lives
// elsewhere and another session's temporary table cannot be read. A table that changed under an
// earlier pass of the read ($2) has every column read: its keys may have moved into a column that
// is no key column now (copied, and the old column dropped). Run with search_path pinned.
constexpr char kKeyColumnsQuery[] =
    "WITH RECURSIVE key_column (relid, attname) AS ("
    " SELECT def.adrelid, a.attname FROM pg_catalog.pg_depend AS dep"
    " JOIN pg_catalog.pg_attrdef AS def ON def.oid = dep.objid"
    " JOIN pg_catalog.pg_attribute AS a ON a.attrelid = def.adrelid AND a.attnum = def.adnum"
    " WHERE dep.classid = 'pg_catalog.pg_attrdef'::pg_catalog.regclass"
    " AND dep.refclassid = 'pg_catalog.pg_proc'::pg_catalog.regclass AND dep.refobjid = $1"
    " UNION"
    " SELECT a.attrelid, a.attname FROM pg_catalog.pg_depend AS dep"
    " JOIN pg_catalog.pg_attribute AS a ON a.atttypid = dep.objid"
    " WHERE dep.classid = 'pg_catalog.pg_type'::pg_catalog.regclass"
    " AND dep.refclassid = 'pg_catalog.pg_proc'::pg_catalog.regclass AND dep.refobjid = $1"
    " AND a.attnum > 0 AND NOT a.attisdropped"
    " UNION"
    " SELECT i.inhrelid, k.attname FROM key_column AS k"
    " JOIN pg_catalog.pg_inherits AS i ON i.inhparent = k.relid)"
    "SELECT c.oid, a.attnum, c.relfilenode FROM key_column AS k"
    " JOIN pg_catalog.pg_class AS c ON c.oid = k.relid"
    " JOIN pg_catalog.pg_attribute AS a ON a.attrelid = c.oid AND a.attname = k.attname"
    " AND NOT a.attisdropped"
    " WHERE c.relkind IN ('r', 'm') AND c.relpersistence <> 't'"
    " UNION"
    " SELECT i.indrelid, i.indkey[0], c.relfilenode FROM pg_catalog.pg_index AS i"
    " JOIN pg_catalog.pg_class AS c ON c.oid = i.indrelid"
    " WHERE i.indkey[0] <> 0 AND c.relkind IN ('r', 'm') AND c.relpersistence <> 't'"
    " UNION"
    " SELECT a.attrelid, a.attnum, c.relfilenode FROM pg_catalog.pg_attribute AS a"
    " JOIN pg_catalog.pg_class AS c ON c.oid = a.attrelid"
    " WHERE a.attrelid OPERATOR(pg_catalog.=) ANY ($2) AND a.attnum > 0 AND NOT a.attisdropped"
    " ORDER BY 1, 2";

// The prepared transactions of this database: a table, column, default or index they created is
// in no catalog a read can see, so the read waits until none is left.
constexpr char kPreparedTransactionsQuery[] =
    "SELECT pg_catalog.count(*) FROM pg_catalog.pg_prepared_xacts "
    "WHERE database OPERATOR(pg_catalog.=) pg_catalog.current_database()";

// The extension's snowflake_nextval() in this database, if it is installed: the columns whose
// default calls it are read whatever index they have. Without it, the columns that lead an
// index are still read, for keys copied from another database.
constexpr char kNextvalQuery[] =
    "SELECT (SELECT p.oid FROM pg_catalog.pg_depend AS d"
    " JOIN pg_catalog.pg_extension AS e ON e.oid = d.refobjid"
    " JOIN pg_catalog.pg_proc AS p ON p.oid = d.objid"
    " WHERE d.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass"
    " AND d.refclassid = 'pg_catalog.pg_extension'::pg_catalog.regclass AND d.deptype = 'e'"
    " AND e.extname = 'snowflake' AND p.proname = 'snowflake_nextval' AND p.pronargs = 0)"
    "::pg_catalog.int8";
