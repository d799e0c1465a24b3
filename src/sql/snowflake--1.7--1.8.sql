-- The snowflake extension, from 1.7 to 1.8: after a start without the mark file, a stored key
-- further ahead of the clock than snowflake.key_floor_max_lead stops generation (it was left out
-- before) until the clock passes it or a superuser releases it with this function.
--
-- What changes for a running server comes with the library, not with this script: once the new
-- library is loaded (a restart), the keys of every database are read by a background worker
-- before the first id after a start without the mark file, and snowflake.key_floor_max_lead is
-- the lead up to which a key holds generation back by itself, beyond which it stops generation
-- (doc/operations.md "Upgrading PostgreSQL").
\echo Use "ALTER EXTENSION snowflake UPDATE TO '1.8'" to load this file. \quit

-- Resuming generation after a start without the mark file ---------------------------------------

-- VOLATILE: it changes the generator's state. STRICT: a NULL key releases nothing. Not for
-- PUBLIC: it lets ids equal to a stored key be issued later, which only a superuser (or a role
-- a superuser grants it to) may decide (doc/security.md "The floor from stored keys").
CREATE FUNCTION snowflake_release_key(key bigint) RETURNS void
    AS 'MODULE_PATHNAME', 'snowflake_release_key'
    LANGUAGE C VOLATILE STRICT;
REVOKE EXECUTE ON FUNCTION snowflake_release_key(bigint) FROM PUBLIC;
COMMENT ON FUNCTION snowflake_release_key(bigint) IS
    'After a start without the mark file, lets generation resume that a stored key of this server''s node pair further ahead of the clock than snowflake.key_floor_max_lead stops: key must be the one the refusal names; the release is logged with the role, and the server issues an id equal to that key when its clock reaches it unless the row has another key by then';

-- How far ahead each table's partitions reach, for monitoring: reaches_until is the end of the
-- unbroken run of partitions from the one that holds now() (now() itself when none does, so that
-- time_left is zero), since an insert past the first gap fails however far later ones reach.
CREATE OR REPLACE VIEW snowflake_partition_reach AS
SELECT t.parent, t.every, t.ahead, t.retain, t.time_zone, t.drop_expired,
       r.partitions,
       snowflake_timestamp(r.lower_id) AS reaches_from,
       r.reaches_until,
       r.reaches_until OPERATOR(pg_catalog.-) pg_catalog.now() AS time_left
FROM snowflake_partitioned_tables AS t
CROSS JOIN LATERAL (
    WITH RECURSIVE bounds AS (
        SELECT (pg_catalog.regexp_match(pg_catalog.pg_get_expr(c.relpartbound, c.oid),
                                        'FROM \(''?(\d+)''?\)'))[1]::bigint AS lower_id,
               (pg_catalog.regexp_match(pg_catalog.pg_get_expr(c.relpartbound, c.oid),
                                        'TO \(''?(\d+)''?\)'))[1]::bigint AS upper_id
        FROM pg_catalog.pg_inherits AS i
        JOIN pg_catalog.pg_class AS c ON c.oid OPERATOR(pg_catalog.=) i.inhrelid
        WHERE i.inhparent OPERATOR(pg_catalog.=) t.parent::pg_catalog.oid
    ), run AS (
        SELECT b.upper_id FROM bounds AS b
        WHERE snowflake_timestamp(b.lower_id) OPERATOR(pg_catalog.<=) pg_catalog.now()
          AND snowflake_timestamp(b.upper_id) OPERATOR(pg_catalog.>) pg_catalog.now()
        UNION
        SELECT b.upper_id FROM bounds AS b
        JOIN run ON b.lower_id OPERATOR(pg_catalog.=) run.upper_id
    )
    SELECT pg_catalog.count(b.upper_id) AS partitions, pg_catalog.min(b.lower_id) AS lower_id,
           COALESCE((SELECT snowflake_timestamp(pg_catalog.max(run.upper_id)) FROM run),
                    pg_catalog.now()) AS reaches_until
    FROM bounds AS b
) AS r
WHERE EXISTS (SELECT FROM pg_catalog.pg_class AS p
              WHERE p.oid OPERATOR(pg_catalog.=) t.parent::pg_catalog.oid);
COMMENT ON VIEW snowflake_partition_reach IS
    'Per table set up by snowflake_partition_table(): its setup, how many partitions it has, the start of the oldest, the end of the unbroken run of partitions from now on, and the time left before inserts would find no partition (alert well before it reaches zero)';
