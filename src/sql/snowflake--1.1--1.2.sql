-- The snowflake extension, from 1.1 to 1.2: a peer check of nothing is an error.
\echo Use "ALTER EXTENSION snowflake UPDATE TO '1.2'" to load this file. \quit

-- CALLED ON NULL INPUT, no longer STRICT: a NULL list gave no rows, which a deploy check counting
-- problems took for a pass. The function now refuses NULL arguments (22004) and an empty list
-- (22023).
ALTER FUNCTION snowflake_check_peers(text[], integer, integer) CALLED ON NULL INPUT;
COMMENT ON FUNCTION snowflake_check_peers(text[], integer, integer) IS
    'Connects to each peer (libpq connection strings) and reports its node ids, its clock offset from this server, and what is wrong: a node pair used twice, ids not set, the extension missing or not preloaded, no answer, a clock too far off. A NULL argument or an empty list is an error';
