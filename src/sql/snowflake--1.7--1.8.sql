-- The snowflake extension, from 1.7 to 1.8: after a start without the mark file, a stored key
-- further ahead of the clock than snowflake.key_floor_max_lead stops generation (it was left out
-- before) until the clock passes it or a superuser releases it with this function. A table set
-- up for time partitions takes its setup with it when it is dropped, the rows that dropped tables
-- left behind are removed, and a restore never applies a setup to another table; a procedure
-- maintains every table, committing after each.
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

-- The setup of a dropped table goes with it ----------------------------------------------------
-- The view reads the column whose type changes: it is made again below.
DROP VIEW snowflake_partition_reach;

-- Rows an older version left behind when their table was dropped: an OID that a later table may
-- be given, and that pg_dump writes as a bare number.
DELETE FROM snowflake_partitioned_tables AS t
WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_class AS c
                  WHERE c.oid OPERATOR(pg_catalog.=) t.parent::pg_catalog.oid);

-- The table a row of snowflake_partitioned_tables sets up (version 1.8): an OID, read and written
-- by name as regclass is, except that its input reads a bare number (what pg_dump writes for a
-- table dropped before the dump) or a name this database has no table of as no table, so that a
-- restore never applies a setup to a relation that merely has that OID (doc/design.md "Time
-- partitions"). Casts to oid and regclass are implicit and binary, so it compares, indexes and
-- passes as they do; from regclass it comes on assignment.
CREATE TYPE snowflake_partitioned_table;

CREATE FUNCTION snowflake_partitioned_table_in(cstring) RETURNS snowflake_partitioned_table
    AS 'MODULE_PATHNAME', 'snowflake_partitioned_table_in' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION snowflake_partitioned_table_out(snowflake_partitioned_table) RETURNS cstring
    AS 'MODULE_PATHNAME', 'snowflake_partitioned_table_out' LANGUAGE C STABLE STRICT PARALLEL SAFE;

CREATE TYPE snowflake_partitioned_table (
    INPUT = snowflake_partitioned_table_in,
    OUTPUT = snowflake_partitioned_table_out,
    LIKE = pg_catalog.regclass
);
COMMENT ON TYPE snowflake_partitioned_table IS
    'The table a row of snowflake_partitioned_tables sets up: an OID written as the table''s name, whose input reads a bare number or the name of no table as no table, so that a restore never re-aims a setup at another table';
COMMENT ON FUNCTION snowflake_partitioned_table_in(cstring) IS
    'Reads a table''s name as regclass does; a bare number, - or the name of no table is read as no table (OID 0)';
COMMENT ON FUNCTION snowflake_partitioned_table_out(snowflake_partitioned_table) IS
    'Writes the table''s name as regclass does';

CREATE CAST (snowflake_partitioned_table AS oid) WITHOUT FUNCTION AS IMPLICIT;
CREATE CAST (snowflake_partitioned_table AS regclass) WITHOUT FUNCTION AS IMPLICIT;
CREATE CAST (regclass AS snowflake_partitioned_table) WITHOUT FUNCTION AS ASSIGNMENT;
COMMENT ON CAST (snowflake_partitioned_table AS oid) IS
    'Implicit and binary, so that the column compares and is indexed as an oid';
COMMENT ON CAST (snowflake_partitioned_table AS regclass) IS
    'Implicit and binary, so that the column passes where a regclass is taken';
COMMENT ON CAST (regclass AS snowflake_partitioned_table) IS
    'On assignment, as the functions write a row: a regclass is a table that exists';

ALTER TABLE snowflake_partitioned_tables ALTER COLUMN parent TYPE snowflake_partitioned_table;

-- C: a row whose parent the type's input read as no table is left out, with a warning that names
-- its setup, rather than kept pointing at no table (doc/design.md "Time partitions").
CREATE FUNCTION snowflake_leave_out_setup_without_table() RETURNS trigger
    AS 'MODULE_PATHNAME', 'snowflake_leave_out_setup_without_table' LANGUAGE C;
COMMENT ON FUNCTION snowflake_leave_out_setup_without_table() IS
    'Trigger of snowflake_partitioned_tables: leaves out, with a warning, a row whose table the input read as no table (a dump''s number for a dropped table, or a table the restore left out)';
CREATE TRIGGER snowflake_leave_out_setup_without_table
    BEFORE INSERT OR UPDATE ON snowflake_partitioned_tables
    FOR EACH ROW EXECUTE FUNCTION snowflake_leave_out_setup_without_table();

-- C: after any DROP, removes the rows whose table is gone, as the configuration table's owner,
-- whoever dropped it, so that no row outlives its table and a dump never holds one.
CREATE FUNCTION snowflake_forget_dropped_setups() RETURNS event_trigger
    AS 'MODULE_PATHNAME', 'snowflake_forget_dropped_setups' LANGUAGE C;
COMMENT ON FUNCTION snowflake_forget_dropped_setups() IS
    'Event trigger on sql_drop: removes the rows of snowflake_partitioned_tables whose table is gone';
CREATE EVENT TRIGGER snowflake_forget_dropped_setups ON sql_drop
    EXECUTE FUNCTION snowflake_forget_dropped_setups();
COMMENT ON EVENT TRIGGER snowflake_forget_dropped_setups IS
    'Removes the setup of a table set up for time partitions when the table is dropped';

-- Maintenance for the scheduler ------------------------------------------------------------------
-- For the scheduler (version 1.8): every table set up that the caller may maintain, each in a
-- transaction of its own that commits before the next begins, so that no lock of one table's
-- step outlives that step. C, as snowflake_maintain_partitions(); CALL it on its own, not in a
-- transaction block. It holds an advisory lock of the caller's role for as long as it runs: a
-- second run by the same role meanwhile does nothing (doc/reference.md "Scheduling").
CREATE PROCEDURE snowflake_run_partition_maintenance()
    AS 'MODULE_PATHNAME', 'snowflake_run_partition_maintenance' LANGUAGE C;
COMMENT ON PROCEDURE snowflake_run_partition_maintenance() IS
    'Maintains every table set up for time partitions whose owner the caller acts for, committing after each table, and does nothing while another run of the same role is in progress; reports what it did as notices';

-- How far ahead each table's partitions reach, for monitoring: reaches_until is the end of the
-- unbroken run of partitions from the one that holds now() (now() itself when none does, so that
-- time_left is zero), since an insert past the first gap fails however far later ones reach.
CREATE VIEW snowflake_partition_reach AS
SELECT t.parent::pg_catalog.regclass AS parent, t.every, t.ahead, t.retain, t.time_zone,
       t.drop_expired, r.partitions,
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
GRANT SELECT ON snowflake_partition_reach TO PUBLIC;
