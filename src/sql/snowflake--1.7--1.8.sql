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
-- Rows an older version left behind when their table was dropped: an OID that a later table may
-- be given, and that pg_dump writes as a bare number. The replica identity of 1.10 comes first,
-- so that a publication of every table, or of the schema, does not fail the update
-- (snowflake--1.9--1.10.sql); one that lists the table with a column list still does.
ALTER TABLE snowflake_partitioned_tables REPLICA IDENTITY FULL;
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

-- The view is made to read nothing of the table while its column's type changes, so that a view
-- of a role's own on it does not stop the update; it is made again below.
CREATE OR REPLACE VIEW snowflake_partition_reach AS
SELECT NULL::pg_catalog.regclass AS parent, NULL::pg_catalog.interval AS every,
       NULL::pg_catalog.int4 AS ahead, NULL::pg_catalog.interval AS retain,
       NULL::pg_catalog.text AS time_zone, NULL::pg_catalog.bool AS drop_expired,
       NULL::pg_catalog.int8 AS partitions, NULL::pg_catalog.timestamptz AS reaches_from,
       NULL::pg_catalog.timestamptz AS reaches_until, NULL::pg_catalog.interval AS time_left
WHERE false;
ALTER TABLE snowflake_partitioned_tables DROP CONSTRAINT snowflake_partitioned_tables_pkey,
    ALTER COLUMN parent TYPE snowflake_partitioned_table, ALTER COLUMN parent SET NOT NULL;
-- One row per table. Unique where parent is a table only: a restore whose trigger is disabled
-- (pg_restore --disable-triggers) keeps each row it reads as no table (OID 0) rather than failing
-- the whole table's restore on the second; maintenance then removes them.
CREATE UNIQUE INDEX snowflake_partitioned_tables_parent_key ON snowflake_partitioned_tables (parent)
    WHERE parent::pg_catalog.oid OPERATOR(pg_catalog.<>) 0::pg_catalog.oid;

-- C: a row whose parent the type's input read as no table is left out, with a warning that names
-- its setup, rather than kept pointing at no table (doc/design.md "Time partitions"). Not for
-- PUBLIC: it is this table's trigger, and refuses to be any other's.
CREATE FUNCTION snowflake_leave_out_setup_without_table() RETURNS trigger
    AS 'MODULE_PATHNAME', 'snowflake_leave_out_setup_without_table' LANGUAGE C;
REVOKE EXECUTE ON FUNCTION snowflake_leave_out_setup_without_table() FROM PUBLIC;
COMMENT ON FUNCTION snowflake_leave_out_setup_without_table() IS
    'Trigger of snowflake_partitioned_tables: leaves out, with a warning, a row whose table the input read as no table (a dump''s number for a dropped table, or a table the restore left out)';
CREATE TRIGGER snowflake_leave_out_setup_without_table
    BEFORE INSERT OR UPDATE ON snowflake_partitioned_tables
    FOR EACH ROW EXECUTE FUNCTION snowflake_leave_out_setup_without_table();

-- C: after any DROP, removes the rows whose table is gone, as the configuration table's owner,
-- whoever dropped it, so that no row outlives its table and a dump never holds one. Not for
-- PUBLIC: only the event trigger calls it.
CREATE FUNCTION snowflake_forget_dropped_setups() RETURNS event_trigger
    AS 'MODULE_PATHNAME', 'snowflake_forget_dropped_setups' LANGUAGE C;
REVOKE EXECUTE ON FUNCTION snowflake_forget_dropped_setups() FROM PUBLIC;
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

-- The partitions of a table partitioned by range, with their bounds read as maintenance reads
-- them (version 1.8): C, from the catalog alone, without a lock. STABLE: the catalog can change
-- between statements. For PUBLIC: bounds are in pg_class, which every role reads.
CREATE FUNCTION snowflake_partition_ranges(parent regclass)
RETURNS TABLE (partition regclass, lower_id bigint, upper_id bigint, starts timestamptz,
               ends timestamptz, takes_rows boolean)
    AS 'MODULE_PATHNAME', 'snowflake_partition_ranges'
    LANGUAGE C STABLE STRICT;
COMMENT ON FUNCTION snowflake_partition_ranges(regclass) IS
    'The partitions of a table partitioned by range: bounds (NULL for MINVALUE or MAXVALUE, both for a default partition), the time their ids span whole (starts, ends: -infinity and infinity without a bound), and whether a row routed to each finds a table (a sub-partitioned partition does with a default partition or hash partitions for every remainder)';

-- The periods snowflake_partition_table() would make (version 1.8), computed as maintenance
-- computes them, for an interval and a time zone between two times: to foresee a setup's
-- partitions and names, or check its boundaries, without a table. C; STABLE: time zone rules can
-- change between statements. For PUBLIC: it reads no table.
CREATE FUNCTION snowflake_partition_boundaries(every interval, time_zone text, since timestamptz,
                                               until timestamptz)
RETURNS TABLE (starts timestamptz, ends timestamptz, name_suffix text)
    AS 'MODULE_PATHNAME', 'snowflake_partition_boundaries'
    LANGUAGE C STABLE STRICT;
COMMENT ON FUNCTION snowflake_partition_boundaries(interval, text, timestamptz, timestamptz) IS
    'The periods of one hour, day, week or month in time_zone that time partitions would have, from the one that holds since through those that begin before until, within the time of Snowflake ids (2010-11-04 to 2080): their start, their end and the suffix of their partition''s name';

-- How far ahead each table's partitions reach, for monitoring: reaches_until is the end of the
-- unbroken run of partitions that take rows from the one that holds now() (now() itself when none
-- does, so that time_left is zero; infinity, and time_left NULL, when the run ends in MAXVALUE or
-- a default partition), since an insert past the first gap fails however far later ones reach.
CREATE OR REPLACE VIEW snowflake_partition_reach AS
SELECT t.parent::pg_catalog.regclass AS parent, t.every, t.ahead, t.retain, t.time_zone,
       t.drop_expired, r.partitions, r.reaches_from, r.reaches_until,
       CASE WHEN pg_catalog.isfinite(r.reaches_until)
            THEN r.reaches_until OPERATOR(pg_catalog.-) pg_catalog.now() END AS time_left
FROM snowflake_partitioned_tables AS t
CROSS JOIN LATERAL (
    WITH RECURSIVE bounds AS (
        SELECT * FROM snowflake_partition_ranges(t.parent)
    ), run AS (
        SELECT b.upper_id, b.ends FROM bounds AS b
        WHERE b.takes_rows AND b.starts OPERATOR(pg_catalog.<=) pg_catalog.now()
          AND b.ends OPERATOR(pg_catalog.>) pg_catalog.now()
        UNION
        SELECT b.upper_id, b.ends FROM bounds AS b
        JOIN run ON b.lower_id OPERATOR(pg_catalog.=) run.upper_id
        WHERE b.takes_rows
    )
    SELECT pg_catalog.count(*) AS partitions, pg_catalog.min(b.starts) AS reaches_from,
           COALESCE((SELECT pg_catalog.max(run.ends) FROM run), pg_catalog.now()) AS reaches_until
    FROM bounds AS b
) AS r
WHERE EXISTS (SELECT FROM pg_catalog.pg_class AS p
              WHERE p.oid OPERATOR(pg_catalog.=) t.parent::pg_catalog.oid);
COMMENT ON VIEW snowflake_partition_reach IS
    'Per table set up by snowflake_partition_table(): its setup, how many partitions it has, the start of the oldest, the end of the unbroken run of partitions that take rows from now on, and the time left before inserts would find no partition (alert well before it reaches zero)';
GRANT SELECT ON snowflake_partition_reach TO PUBLIC;
