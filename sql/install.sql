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

DROP EXTENSION snowflake;
CREATE EXTENSION snowflake;
\c contrib_regression
DROP DATABASE snowflake_install;
