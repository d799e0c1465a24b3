-- The snowflake extension, from 1.4 to 1.5: snowflake_convert_column() in C, and the peer check
-- by the fleet guard's rules.
\echo Use "ALTER EXTENSION snowflake UPDATE TO '1.5'" to load this file. \quit

-- The same function (name, arguments, result columns, SQLSTATEs) with a C driver, so that each
-- table is altered, read and judged as its owner in a security-restricted operation, every path
-- of the key's values is followed, and a table that cannot take a new id is refused before
-- anything changes (doc/design.md "The conversion"). VOLATILE: it alters tables. PARALLEL UNSAFE
-- (the default). CALLED ON NULL INPUT: a NULL argument is refused rather than converting nothing
-- unnoticed. For PUBLIC as before: it converts only tables whose owners the caller acts for, and
-- pins search_path itself.
CREATE OR REPLACE FUNCTION snowflake_convert_column("table" regclass, "column" name)
RETURNS TABLE (object text, change text)
    AS 'MODULE_PATHNAME', 'snowflake_convert_column'
    LANGUAGE C VOLATILE CALLED ON NULL INPUT;
COMMENT ON FUNCTION snowflake_convert_column(regclass, name) IS
    'Turns a smallint, integer or bigint key fed by a sequence or an identity into bigint DEFAULT snowflake_nextval(), keeping every key and widening every column its values reach (foreign keys, partitions, inheritance children, chains of keys), each table altered as its owner, in the caller''s transaction; returns each change made';

-- The same function, judged by the fleet guard's rules (doc/reference.md "Peer check"): the
-- server it runs on is recognised by its instance token, a standby holds no pair, one server
-- listed twice is one server, and the problems are worded as the guard words them. CREATE OR
-- REPLACE keeps its grants (not to PUBLIC); CALLED ON NULL INPUT as since 1.2.
CREATE OR REPLACE FUNCTION snowflake_check_peers(
    peers text[],
    max_clock_offset_ms integer DEFAULT 10000,
    timeout_ms integer DEFAULT 5000)
RETURNS TABLE (
    peer text,
    datacenter_id integer,
    machine_id integer,
    clock_offset_ms bigint,
    problem text)
    AS 'MODULE_PATHNAME', 'snowflake_check_peers_with_fleet_rules'
    LANGUAGE C VOLATILE CALLED ON NULL INPUT;
COMMENT ON FUNCTION snowflake_check_peers(text[], integer, integer) IS
    'Connects to each peer (libpq connection strings) at once and reports its node ids, its clock offset from this server, and what is wrong by the fleet guard''s rules: another live server holding this server''s node pair or another peer''s, ids not set, the extension missing or not preloaded, no answer, a clock too far off; this server, recognised by its instance token, and standbys hold no pair. A NULL argument or an empty list is an error';
