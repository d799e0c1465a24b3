-- The snowflake extension, from 1.6 to 1.7: time partitions of a table keyed by Snowflake ids,
-- kept ahead of the clock and trimmed by a retention.
\echo Use "ALTER EXTENSION snowflake UPDATE TO '1.7'" to load this file. \quit

-- Time partitions (version 1.7) ------------------------------------------------------------------
-- A table range-partitioned on its Snowflake key, kept ahead of the clock and trimmed by a
-- retention (doc/reference.md "Time partitions", doc/design.md "Time partitions").

-- One row per table set up, written only by snowflake_partition_table() (as this table's owner);
-- pg_dump and pg_restore keep its rows, since it is a configuration table of the extension.
CREATE TABLE snowflake_partitioned_tables (
    parent regclass PRIMARY KEY,
    every interval NOT NULL,
    ahead integer NOT NULL CHECK (ahead BETWEEN 0 AND 1000),
    retain interval,
    time_zone text NOT NULL,
    drop_expired boolean NOT NULL DEFAULT false
);
COMMENT ON TABLE snowflake_partitioned_tables IS
    'The tables set up for time partitions by snowflake_partition_table(): the interval, how many partitions to keep ahead of the current one, the retention, the time zone of the boundaries and whether expired partitions are dropped after they are detached';
SELECT pg_catalog.pg_extension_config_dump('snowflake_partitioned_tables', '');
GRANT SELECT ON snowflake_partitioned_tables TO PUBLIC;

-- C, so that every statement on the table runs as its owner in a security-restricted operation
-- (doc/design.md "Time partitions"). VOLATILE: it creates, attaches and detaches tables.
-- CALLED ON NULL INPUT: a NULL argument other than retain is refused. For PUBLIC: it acts only on
-- tables whose owners the caller acts for, and pins search_path itself.
CREATE FUNCTION snowflake_partition_table(parent regclass, every interval,
                                          ahead integer DEFAULT 3,
                                          retain interval DEFAULT NULL,
                                          time_zone text DEFAULT 'UTC',
                                          drop_expired boolean DEFAULT false)
RETURNS TABLE (parent regclass, partition text, action text)
    AS 'MODULE_PATHNAME', 'snowflake_partition_table'
    LANGUAGE C VOLATILE CALLED ON NULL INPUT;
COMMENT ON FUNCTION snowflake_partition_table(regclass, interval, integer, interval, text, boolean) IS
    'Sets a table partitioned by range on its bigint or snowflake key up for partitions of one hour, day, week or month aligned in time_zone: adopts the partitions that line up, creates those missing from the oldest key to ahead periods past the current one, and detaches (drop_expired: drops) those older than retain; returns what it did';

-- VOLATILE, CALLED ON NULL INPUT (NULL: every table set up that the caller may maintain) and for
-- PUBLIC, as snowflake_partition_table().
CREATE FUNCTION snowflake_maintain_partitions(parent regclass DEFAULT NULL)
RETURNS TABLE (parent regclass, partition text, action text)
    AS 'MODULE_PATHNAME', 'snowflake_maintain_partitions'
    LANGUAGE C VOLATILE CALLED ON NULL INPUT;
COMMENT ON FUNCTION snowflake_maintain_partitions(regclass) IS
    'Brings a table set up by snowflake_partition_table(), or every such table whose owner the caller acts for, up to its setup: creates the partitions missing up to ahead periods past the current one and detaches (or drops) those older than the retention, never one holding a newer row; idempotent; returns what it did, or nothing to do';

-- How far ahead each table's partitions reach, for monitoring: an insert past reaches_until fails.
CREATE VIEW snowflake_partition_reach AS
SELECT t.parent, t.every, t.ahead, t.retain, t.time_zone, t.drop_expired,
       pg_catalog.count(b.upper_id) AS partitions,
       snowflake_timestamp(pg_catalog.min(b.lower_id)) AS reaches_from,
       snowflake_timestamp(pg_catalog.max(b.upper_id)) AS reaches_until,
       snowflake_timestamp(pg_catalog.max(b.upper_id)) OPERATOR(pg_catalog.-) pg_catalog.now()
           AS time_left
FROM snowflake_partitioned_tables AS t
LEFT JOIN LATERAL (
    SELECT (pg_catalog.regexp_match(pg_catalog.pg_get_expr(c.relpartbound, c.oid),
                                    'FROM \(''?(\d+)''?\)'))[1]::bigint AS lower_id,
           (pg_catalog.regexp_match(pg_catalog.pg_get_expr(c.relpartbound, c.oid),
                                    'TO \(''?(\d+)''?\)'))[1]::bigint AS upper_id
    FROM pg_catalog.pg_inherits AS i
    JOIN pg_catalog.pg_class AS c ON c.oid OPERATOR(pg_catalog.=) i.inhrelid
    WHERE i.inhparent OPERATOR(pg_catalog.=) t.parent::pg_catalog.oid
) AS b ON true
WHERE EXISTS (SELECT FROM pg_catalog.pg_class AS p
              WHERE p.oid OPERATOR(pg_catalog.=) t.parent::pg_catalog.oid)
GROUP BY t.parent, t.every, t.ahead, t.retain, t.time_zone, t.drop_expired;
COMMENT ON VIEW snowflake_partition_reach IS
    'Per table set up by snowflake_partition_table(): its setup, how many partitions it has, the start of the oldest and the end of the newest, and the time left before inserts would find no partition (alert well before it reaches zero)';
GRANT SELECT ON snowflake_partition_reach TO PUBLIC;
