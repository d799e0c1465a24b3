-- The snowflake extension, from 1.10 to 1.11: the library no longer lets a read of the settled
-- bound lower the durable mark or use up every id (CHANGELOG.md "1.11"). The fix is in the
-- library; no SQL object changes.
\echo Use "ALTER EXTENSION snowflake UPDATE TO '1.11'" to load this file. \quit
