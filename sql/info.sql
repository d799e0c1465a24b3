-- snowflake_info(): the settings and the shared generator state.
CREATE EXTENSION IF NOT EXISTS snowflake;
SET timezone = 'UTC';

-- Column names and types are part of the contract.
SELECT attnum, attname, format_type(atttypid, atttypmod)
FROM pg_attribute
WHERE attrelid = 'snowflake_info'::regclass AND attnum > 0
ORDER BY attnum;
SELECT attnum, attname, format_type(atttypid, atttypmod)
FROM pg_attribute
WHERE attrelid = 'snowflake_parts'::regclass AND attnum > 0
ORDER BY attnum;

SELECT datacenter_id, machine_id, epoch FROM snowflake_info();

-- The counters move with the ids this session makes.
CREATE TEMP TABLE before AS SELECT * FROM snowflake_info();
CREATE TEMP TABLE made AS SELECT snowflake_nextval() AS id FROM generate_series(1, 50000);
SELECT i.ids_generated - b.ids_generated >= 50000 AS counted_every_id,
       i.last_timestamp >= (SELECT max(snowflake_timestamp(id)) FROM made) AS last_covers_ids,
       i.last_timestamp <= clock_timestamp() AS last_not_in_future,
       i.persisted_mark >= i.last_timestamp AS mark_covers_last,
       i.persisted_mark <= clock_timestamp() + interval '1 second' AS mark_within_a_lease
FROM snowflake_info() AS i, before AS b;

-- Every object of the extension carries a comment.
SELECT p.oid::regprocedure AS function_without_comment
FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid AND d.classid = 'pg_proc'::regclass
WHERE d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'snowflake')
  AND obj_description(p.oid, 'pg_proc') IS NULL;
-- The implicit array type of each composite type is left out: it says nothing beyond its element
-- type, and only PostgreSQL 18 makes it a member of the extension. So is the row type of a table
-- or view, which its relation's comment describes.
SELECT t.oid::regtype AS type_without_comment
FROM pg_type t JOIN pg_depend d ON d.objid = t.oid AND d.classid = 'pg_type'::regclass
WHERE d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'snowflake')
  AND NOT EXISTS (SELECT 1 FROM pg_type element WHERE element.typarray = t.oid)
  AND NOT EXISTS (SELECT 1 FROM pg_class r WHERE r.oid = t.typrelid AND r.relkind IN ('r', 'v'))
  AND obj_description(t.oid, 'pg_type') IS NULL
ORDER BY t.oid::regtype::text;
SELECT pg_describe_object(d.classid, d.objid, 0) AS object_without_comment
FROM pg_depend AS d
WHERE d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'snowflake')
  AND d.deptype = 'e' AND d.classid NOT IN ('pg_proc'::regclass, 'pg_type'::regclass)
  AND obj_description(d.objid, d.classid::regclass::text) IS NULL
ORDER BY 1;

-- Volatility, strictness and parallel safety are part of the contract too.
SELECT p.proname AS function, pg_get_function_arguments(p.oid) AS arguments,
       pg_get_function_result(p.oid) AS result, p.provolatile AS volatility,
       p.proisstrict AS strict, p.proparallel AS parallel,
       has_function_privilege('public', p.oid, 'EXECUTE') AS public_exec
FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid AND d.classid = 'pg_proc'::regclass
WHERE d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'snowflake')
ORDER BY p.proname, arguments;
