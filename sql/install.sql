-- The complete install script of the current version (snowflake--1.10.sql) and the update scripts
-- from 1.0 through every version are different files: both must end with the same objects,
-- definitions, comments, grants and composite types, or one of them is wrong. In a database of
-- its own, where no table of the other tests depends on the extension.
CREATE DATABASE snowflake_install;
\c snowflake_install
CREATE EXTENSION snowflake;
SELECT extversion FROM pg_extension WHERE extname = 'snowflake';

\i test/extension_objects.sql
CREATE TEMP TABLE fresh_install AS SELECT * FROM pg_temp.extension_objects() AS o (object);
SELECT count(*) >= 18 AS has_objects FROM fresh_install;

DROP EXTENSION snowflake;
CREATE EXTENSION snowflake VERSION '1.0';
ALTER EXTENSION snowflake UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'snowflake';
-- Rows only the fresh install has, then rows only the updated one has: none either way.
SELECT 'fresh only' AS side, object FROM fresh_install
EXCEPT SELECT 'fresh only', o FROM pg_temp.extension_objects() AS o
UNION ALL
(SELECT 'updated only', o FROM pg_temp.extension_objects() AS o
 EXCEPT SELECT 'updated only', object FROM fresh_install);

DROP EXTENSION snowflake;
CREATE EXTENSION snowflake;
\c contrib_regression
DROP DATABASE snowflake_install;
