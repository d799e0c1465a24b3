-- The snowflake extension, from 1.0 to 1.1: the peer check.
\echo Use "ALTER EXTENSION snowflake UPDATE TO '1.1'" to load this file. \quit

-- VOLATILE: it asks other servers. PARALLEL UNSAFE (the default): it opens connections. STRICT:
-- no list of peers, no rows. Not for PUBLIC: it connects out as the server.
CREATE FUNCTION snowflake_check_peers(
    peers text[],
    max_clock_offset_ms integer DEFAULT 10000,
    timeout_ms integer DEFAULT 5000)
RETURNS TABLE (
    peer text,
    datacenter_id integer,
    machine_id integer,
    clock_offset_ms bigint,
    problem text)
    AS 'MODULE_PATHNAME', 'snowflake_check_peers'
    LANGUAGE C VOLATILE STRICT;
REVOKE EXECUTE ON FUNCTION snowflake_check_peers(text[], integer, integer) FROM PUBLIC;
COMMENT ON FUNCTION snowflake_check_peers(text[], integer, integer) IS
    'Connects to each peer (libpq connection strings) and reports its node ids, its clock offset from this server, and what is wrong: a node pair used twice, ids not set, the extension missing or not preloaded, no answer, a clock too far off';
