-- The snowflake extension, from 1.3 to 1.4: the fleet guard's results.
\echo Use "ALTER EXTENSION snowflake UPDATE TO '1.4'" to load this file. \quit

-- VOLATILE: they read what the fleet guard found last, which changes at every check. Not for
-- PUBLIC: the members are connection strings (passwords masked) of the servers that generate.
CREATE FUNCTION snowflake_fleet_status()
RETURNS TABLE (
    member text,
    self boolean,
    datacenter_id integer,
    machine_id integer,
    clock_offset_ms bigint,
    problem text,
    checked_at timestamptz)
    AS 'MODULE_PATHNAME', 'snowflake_fleet_status'
    LANGUAGE C VOLATILE;
REVOKE EXECUTE ON FUNCTION snowflake_fleet_status() FROM PUBLIC;
COMMENT ON FUNCTION snowflake_fleet_status() IS
    'One row per member of snowflake.fleet as the fleet guard found it at its last check: whether it is this server, its node ids, its clock offset from this server, and what is wrong (no answer, library or ids missing, this server''s node pair or another member''s, a clock too far off)';

CREATE FUNCTION snowflake_fleet_summary(
    OUT checked_at timestamptz,
    OUT members integer,
    OUT members_with_problems integer,
    OUT refusing boolean)
    AS 'MODULE_PATHNAME', 'snowflake_fleet_summary'
    LANGUAGE C VOLATILE;
REVOKE EXECUTE ON FUNCTION snowflake_fleet_summary() FROM PUBLIC;
COMMENT ON FUNCTION snowflake_fleet_summary() IS
    'When the fleet guard last checked snowflake.fleet, how many members it has and how many have a problem, and whether snowflake_nextval() refuses because another live member holds this server''s node pair';
