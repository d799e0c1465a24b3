-- CREATE EXTENSION runs snowflake--1.0.sql and then every update script, as ALTER EXTENSION
-- UPDATE does from each older version (doc/design.md "The install script"): a fresh install and
-- every update path must end with the same objects, definitions, comments, grants and composite
-- types. In a database of its own, where no table of the other tests depends on the extension.
CREATE DATABASE snowflake_install;
\c snowflake_install
CREATE EXTENSION snowflake;
SELECT e.extversion = a.default_version AS at_default_version
FROM pg_extension AS e JOIN pg_available_extensions AS a ON a.name = e.extname
WHERE e.extname = 'snowflake';

\i test/extension_objects.sql
CREATE TEMP TABLE fresh_install AS SELECT * FROM pg_temp.extension_objects() AS o (object);
SELECT count(*) >= 18 AS has_objects FROM fresh_install;

-- Rows only the fresh install has, and rows only the updated one has.
CREATE FUNCTION pg_temp.differences() RETURNS bigint LANGUAGE sql AS $$
SELECT count(*) FROM (
    (SELECT object FROM fresh_install EXCEPT SELECT o FROM pg_temp.extension_objects() AS o)
    UNION ALL
    (SELECT o FROM pg_temp.extension_objects() AS o EXCEPT SELECT object FROM fresh_install)) AS d
$$;

-- From every older version, oldest first: none differs. The output names no version, so that a
-- new one changes nothing here.
CREATE TEMP TABLE update_paths (from_version text, differences bigint);
DO $$
DECLARE
    older text;
BEGIN
    FOR older IN SELECT v.version FROM pg_available_extension_versions AS v
                 JOIN pg_available_extensions AS a ON a.name = v.name
                 WHERE v.name = 'snowflake' AND v.version <> a.default_version
                 ORDER BY string_to_array(v.version, '.')::int[] LOOP
        DROP EXTENSION snowflake;
        EXECUTE format('CREATE EXTENSION snowflake VERSION %L', older);
        ALTER EXTENSION snowflake UPDATE;
        INSERT INTO update_paths SELECT older, pg_temp.differences();
    END LOOP;
END
$$;
SELECT count(*) >= 10 AS from_every_older_version FROM update_paths;
SELECT from_version, differences FROM update_paths WHERE differences <> 0;

-- The extension's tables live in snowflake_catalog (1.12), whatever schema the extension is
-- created in; it cannot move, since its tables would stay behind.
DROP EXTENSION snowflake;
CREATE SCHEMA elsewhere;
CREATE EXTENSION snowflake SCHEMA elsewhere;
SELECT n.nspname, count(*) FROM pg_depend AS d JOIN pg_class AS c ON c.oid = d.objid
JOIN pg_namespace AS n ON n.oid = c.relnamespace
WHERE d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'snowflake')
  AND d.classid = 'pg_class'::regclass AND c.relkind = 'r' GROUP BY 1;
SELECT elsewhere.snowflake_machine_id(elsewhere.snowflake_nextval()) AS machine_id;
-- The planner hook knows its function there, by what it is rather than by its name: the plan
-- gains the condition on the key.
CREATE TABLE readings (id bigint PRIMARY KEY);
CREATE FUNCTION pg_temp.gains_key_condition(query text) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    line text;
BEGIN
    FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query LOOP
        IF line ~ '\(id >= ''[0-9]+''::bigint\)' THEN
            RETURN true;
        END IF;
    END LOOP;
    RETURN false;
END
$$;
SELECT pg_temp.gains_key_condition($q$SELECT count(*) FROM readings
    WHERE elsewhere.snowflake_timestamp(id) >= '2025-12-01 20:00+00'$q$);
DROP TABLE readings;
ALTER EXTENSION snowflake SET SCHEMA public;
DROP EXTENSION snowflake;
SELECT count(*) AS schemas_left FROM pg_namespace WHERE nspname = 'snowflake_catalog';

-- A schema of that name that the extension did not make may be another role's: creating the
-- extension, or updating it to 1.12, fails rather than taking it.
CREATE ROLE catalog_squatter;
GRANT CREATE ON DATABASE snowflake_install TO catalog_squatter;
SET ROLE catalog_squatter;
CREATE SCHEMA snowflake_catalog;
CREATE TABLE snowflake_catalog.snowflake_partitioned_tables (parent oid);
RESET ROLE;
GRANT CREATE ON SCHEMA public TO catalog_squatter;
-- Terse: PostgreSQL 17 and later add the line of the script as context.
\set VERBOSITY terse
CREATE EXTENSION snowflake;
CREATE EXTENSION snowflake VERSION '1.11';
ALTER EXTENSION snowflake UPDATE;
\set VERBOSITY default
-- Before the update the library reads the setups where 1.11 keeps them, not in her table.
CREATE TABLE events (id bigint NOT NULL DEFAULT snowflake_nextval() PRIMARY KEY)
    PARTITION BY RANGE (id);
SELECT count(*) > 0 AS set_up FROM snowflake_partition_table('events', '1 day', 1);
SELECT count(*) AS in_her_table FROM snowflake_catalog.snowflake_partitioned_tables;
SELECT parent FROM public.snowflake_partitioned_tables;
-- Nor does it take her tables named like 1.12's for its own: an attach of a partition then
-- stamps nothing, where her view would have named another table's column.
SET ROLE catalog_squatter;
CREATE TABLE public.snowflake_tombstones (x int);
CREATE VIEW public.snowflake_tracked_tables AS
SELECT c.oid::regclass AS tracked, 'balance'::name AS version_column
FROM pg_class AS c WHERE c.relkind = 'p';
RESET ROLE;
CREATE TABLE accounts (id bigint, balance numeric) PARTITION BY RANGE (id);
CREATE TABLE accounts_old (id bigint, balance numeric);
INSERT INTO accounts_old VALUES (150, 1000);
ALTER TABLE accounts ATTACH PARTITION accounts_old FOR VALUES FROM (100) TO (200);
SELECT id, balance FROM accounts;
DROP TABLE accounts, public.snowflake_tombstones;
DROP VIEW public.snowflake_tracked_tables;
DROP TABLE events;
DROP SCHEMA snowflake_catalog CASCADE;
DROP OWNED BY catalog_squatter;
DROP ROLE catalog_squatter;
ALTER EXTENSION snowflake UPDATE;
SELECT extversion = (SELECT default_version FROM pg_available_extensions WHERE name = 'snowflake')
    AS updated FROM pg_extension WHERE extname = 'snowflake';

DROP EXTENSION snowflake;
CREATE EXTENSION snowflake;
\c contrib_regression
DROP DATABASE snowflake_install;
