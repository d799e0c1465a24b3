-- Natural time predicates on snowflake_timestamp(column) are answered by the column's btree, and
-- return exactly what they return without the rewrite.
CREATE EXTENSION IF NOT EXISTS snowflake;
SET timezone = 'UTC';

-- One id a second from 2025-12-01 00:00 UTC for about 28 hours.
CREATE TABLE readings (id bigint PRIMARY KEY, sensor integer NOT NULL);
INSERT INTO readings
SELECT snowflake_encode(1764547200000 + n * 1000, 1, 1, 0), n % 10 FROM generate_series(0, 99999) AS n;
ANALYZE readings;
SET enable_seqscan = off;

-- Each operator, both ways round, BETWEEN, and a stable expression.
EXPLAIN (COSTS OFF) SELECT count(*) FROM readings WHERE snowflake_timestamp(id) >= '2025-12-01 10:00+00';
EXPLAIN (COSTS OFF) SELECT count(*) FROM readings WHERE snowflake_timestamp(id) > '2025-12-01 10:00+00';
EXPLAIN (COSTS OFF) SELECT count(*) FROM readings WHERE snowflake_timestamp(id) < '2025-12-01 10:00+00';
EXPLAIN (COSTS OFF) SELECT count(*) FROM readings WHERE snowflake_timestamp(id) <= '2025-12-01 10:00+00';
EXPLAIN (COSTS OFF) SELECT count(*) FROM readings WHERE snowflake_timestamp(id) = '2025-12-01 10:00+00';
EXPLAIN (COSTS OFF) SELECT count(*) FROM readings WHERE '2025-12-01 10:00+00' < snowflake_timestamp(id);
EXPLAIN (COSTS OFF) SELECT count(*) FROM readings
WHERE snowflake_timestamp(id) BETWEEN '2025-12-01 10:00+00' AND '2025-12-01 11:00+00';
EXPLAIN (COSTS OFF) SELECT count(*) FROM readings
WHERE snowflake_timestamp(id) >= now() - interval '1 hour';

-- Prepared statements, with a generic plan: the bound is a parameter of the index condition.
-- Below a bound known only at run time, the condition is "<= snowflake_max_id()", which stays
-- exact past 2080 where snowflake_min_id() clamps.
PREPARE readings_since(timestamptz) AS
SELECT count(*) FROM readings WHERE snowflake_timestamp(id) >= $1;
PREPARE readings_before(timestamptz) AS
SELECT count(*) FROM readings WHERE snowflake_timestamp(id) < $1;
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE readings_since('2025-12-01 10:00+00');
EXECUTE readings_since('2025-12-01 10:00+00');
EXPLAIN (COSTS OFF) EXECUTE readings_before('2025-12-01 10:00+00');
EXECUTE readings_before('2025-12-01 10:00+00');
RESET plan_cache_mode;
DEALLOCATE readings_since;
DEALLOCATE readings_before;

-- The added condition calls snowflake_min_id()/snowflake_max_id(): a role that may not run them
-- gets the plain plan, never an error the query would not raise without the rewrite.
CREATE ROLE time_reader;
GRANT SELECT ON readings TO time_reader;
REVOKE EXECUTE ON FUNCTION snowflake_min_id(timestamptz) FROM PUBLIC;
SET ROLE time_reader;
EXPLAIN (COSTS OFF) SELECT count(*) FROM readings WHERE snowflake_timestamp(id) >= '2025-12-01 10:00+00';
SELECT count(*) FROM readings WHERE snowflake_timestamp(id) >= '2025-12-01 10:00+00';
RESET ROLE;
GRANT EXECUTE ON FUNCTION snowflake_min_id(timestamptz) TO PUBLIC;

-- A plan cached under a role that may run the helpers is planned anew for one that may not: a
-- generic plan of PREPARE, and a PL/pgSQL function's plan, each first run as time_writer.
CREATE ROLE time_writer;
GRANT SELECT ON readings TO time_writer;
REVOKE EXECUTE ON FUNCTION snowflake_min_id(timestamptz), snowflake_max_id(timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION snowflake_min_id(timestamptz), snowflake_max_id(timestamptz) TO time_writer;
CREATE FUNCTION readings_since_fn(since timestamptz) RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
    RETURN (SELECT count(*) FROM readings WHERE snowflake_timestamp(id) >= since);
END $$;
SET plan_cache_mode = force_generic_plan;
SET ROLE time_writer;
PREPARE readings_since(timestamptz) AS
SELECT count(*) FROM readings WHERE snowflake_timestamp(id) >= $1;
EXPLAIN (COSTS OFF) EXECUTE readings_since('2025-12-01 10:00+00');
EXECUTE readings_since('2025-12-01 10:00+00');
SELECT readings_since_fn('2025-12-01 10:00+00');
SET ROLE time_reader;
EXPLAIN (COSTS OFF) EXECUTE readings_since('2025-12-01 10:00+00');
EXECUTE readings_since('2025-12-01 10:00+00');
SELECT readings_since_fn('2025-12-01 10:00+00');
SET ROLE time_writer;
EXECUTE readings_since('2025-12-01 10:00+00');
RESET ROLE;
RESET plan_cache_mode;
DEALLOCATE readings_since;
DROP FUNCTION readings_since_fn(timestamptz);
GRANT EXECUTE ON FUNCTION snowflake_min_id(timestamptz), snowflake_max_id(timestamptz) TO PUBLIC;
REVOKE EXECUTE ON FUNCTION snowflake_min_id(timestamptz), snowflake_max_id(timestamptz) FROM time_writer;
REVOKE SELECT ON readings FROM time_reader, time_writer;
DROP ROLE time_reader, time_writer;

-- A bound that can fail is evaluated once when the plan starts, even where no row would reach
-- the original comparison: a bad text value of a generic plan's parameter fails with the rewrite
-- (22007) on an empty table, where without it the query returns 0. See doc/reference.md "Time predicates".
CREATE TABLE no_readings (id bigint PRIMARY KEY);
SET plan_cache_mode = force_generic_plan;
PREPARE none_since(text) AS
SELECT count(*) FROM no_readings WHERE snowflake_timestamp(id) >= $1::timestamptz;
EXECUTE none_since('not a time');
DEALLOCATE none_since;
SET snowflake.time_predicates = off;
PREPARE none_since(text) AS
SELECT count(*) FROM no_readings WHERE snowflake_timestamp(id) >= $1::timestamptz;
EXECUTE none_since('not a time');
DEALLOCATE none_since;
RESET snowflake.time_predicates;
RESET plan_cache_mode;
DROP TABLE no_readings;

-- Joins: the condition lands on the column of whichever table it names; a bound that depends on
-- another table's row is left alone.
CREATE TABLE sensors (sensor integer PRIMARY KEY, installed timestamptz NOT NULL);
INSERT INTO sensors SELECT n, '2025-12-01 12:00+00'::timestamptz + n * interval '1 minute'
FROM generate_series(0, 9) AS n;
ANALYZE sensors;
EXPLAIN (COSTS OFF) SELECT count(*) FROM sensors s JOIN readings r ON r.sensor = s.sensor
WHERE snowflake_timestamp(r.id) >= '2025-12-01 20:00+00';
EXPLAIN (COSTS OFF) SELECT count(*) FROM sensors s JOIN readings r ON r.sensor = s.sensor
  AND snowflake_timestamp(r.id) < '2025-12-01 01:00+00';
-- (With sequential scans allowed, as no index can serve it: PostgreSQL 18 marks a disabled node.)
SET enable_seqscan = on;
EXPLAIN (COSTS OFF) SELECT count(*) FROM sensors s JOIN readings r ON r.sensor = s.sensor
WHERE snowflake_timestamp(r.id) >= s.installed;
SET enable_seqscan = off;

-- Subqueries, CTEs and sublinks are rewritten at every level.
EXPLAIN (COSTS OFF) SELECT count(*) FROM (
    SELECT id FROM readings WHERE snowflake_timestamp(id) >= '2025-12-01 20:00+00' OFFSET 0) s;
EXPLAIN (COSTS OFF) WITH recent AS MATERIALIZED (
    SELECT id FROM readings WHERE snowflake_timestamp(id) >= '2025-12-01 20:00+00')
SELECT count(*) FROM recent;
-- (With hash joins disabled: between a semi join and a join to the distinct sensors, PostgreSQL
-- 19 chooses otherwise than 15 to 18 do, and a merge join is the plan every version agrees on.)
SET enable_hashjoin = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM sensors s
WHERE EXISTS (SELECT 1 FROM readings r
              WHERE r.sensor = s.sensor AND snowflake_timestamp(r.id) < '2025-12-01 00:01+00');
RESET enable_hashjoin;

-- The function is recognised by what it is, not by its name: an impostor of the same name is not
-- rewritten (sql/install.sql shows the extension's own in another schema).
CREATE SCHEMA impostor;
CREATE FUNCTION impostor.snowflake_timestamp(id bigint) RETURNS timestamptz
    LANGUAGE plpgsql IMMUTABLE AS $$ BEGIN RETURN to_timestamp(id % 100000); END $$;
EXPLAIN (COSTS OFF) SELECT count(*) FROM readings
WHERE impostor.snowflake_timestamp(id) >= '2025-12-01 20:00+00';
DROP SCHEMA impostor CASCADE;

-- Switched off, the old plan comes back.
SET snowflake.time_predicates = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM readings WHERE snowflake_timestamp(id) >= '2025-12-01 10:00+00';
RESET snowflake.time_predicates;

-- Cached plans follow the setting: a generic plan made with the rewrite is planned anew without
-- it once the setting is off, and with it again once it is back on, as is a PL/pgSQL function's
-- plan, and a setting undone by a rollback. Which plan ran shows in the one difference the
-- rewrite makes (doc/reference.md "Time predicates"): the added index condition skips a negative
-- id, which the plain plan hands to snowflake_timestamp() (22003).
CREATE TABLE signed_ids (id bigint PRIMARY KEY);
INSERT INTO signed_ids VALUES (-1), (snowflake_encode('2025-12-01 10:00+00'::timestamptz, 1, 1, 0));
ANALYZE signed_ids;
-- (Errors without their context: 18 calls the PL/pgSQL expression what 15 to 17 call an SQL one.)
\set VERBOSITY terse
CREATE FUNCTION signed_since_fn(since timestamptz) RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
    RETURN (SELECT count(*) FROM signed_ids WHERE snowflake_timestamp(id) >= since);
END $$;
SET plan_cache_mode = force_generic_plan;
PREPARE signed_since(timestamptz) AS
SELECT count(*) FROM signed_ids WHERE snowflake_timestamp(id) >= $1;
EXPLAIN (COSTS OFF) EXECUTE signed_since('2025-12-01 00:00+00');
EXECUTE signed_since('2025-12-01 00:00+00');
SELECT signed_since_fn('2025-12-01 00:00+00');
SET snowflake.time_predicates = off;
EXPLAIN (COSTS OFF) EXECUTE signed_since('2025-12-01 00:00+00');
EXECUTE signed_since('2025-12-01 00:00+00');
SELECT signed_since_fn('2025-12-01 00:00+00');
RESET snowflake.time_predicates;
EXECUTE signed_since('2025-12-01 00:00+00');
SELECT signed_since_fn('2025-12-01 00:00+00');
BEGIN;
SET LOCAL snowflake.time_predicates = off;
EXECUTE signed_since('2025-12-01 00:00+00');
ROLLBACK;
EXECUTE signed_since('2025-12-01 00:00+00');
SELECT signed_since_fn('2025-12-01 00:00+00');
-- A function's SET clause: its own plan is made without the rewrite, the caller's with it after.
CREATE FUNCTION signed_since_plain(since timestamptz) RETURNS bigint LANGUAGE plpgsql
SET snowflake.time_predicates = off AS $$
BEGIN
    RETURN (SELECT count(*) FROM signed_ids WHERE snowflake_timestamp(id) >= since);
END $$;
SELECT signed_since_plain('2025-12-01 00:00+00');
EXECUTE signed_since('2025-12-01 00:00+00');
SELECT signed_since_fn('2025-12-01 00:00+00');
RESET plan_cache_mode;
DEALLOCATE signed_since;
DROP FUNCTION signed_since_fn(timestamptz), signed_since_plain(timestamptz);
DROP TABLE signed_ids;
\set VERBOSITY default

-- Results are identical with the rewrite on and off, for every operator and boundary: exact
-- milliseconds, sub-millisecond instants, the epoch, before it, the last millisecond of 2080,
-- after it, the infinities and NULL; as literals and as parameters of a generic plan. The ids
-- include the largest one, 9223372036854775807.
CREATE TABLE edge_ids (id bigint PRIMARY KEY);
INSERT INTO edge_ids
SELECT snowflake_encode(ms, node, node, seq)
FROM (VALUES (1288834974657), (1288834974658), (1699999999999), (1700000000000), (1700000000001),
             (3487858230207), (3487858230208)) AS t(ms),
     (VALUES (0), (31)) AS n(node), (VALUES (0), (4095)) AS s(seq);
ANALYZE edge_ids;
CREATE FUNCTION pg_temp.matching(op text, bound timestamptz, rewrite boolean, as_parameter boolean)
RETURNS bigint[] LANGUAGE plpgsql AS $$
DECLARE
    result bigint[];
BEGIN
    PERFORM set_config('snowflake.time_predicates', rewrite::text, true);
    IF as_parameter THEN
        PERFORM set_config('plan_cache_mode', 'force_generic_plan', true);
        EXECUTE format('PREPARE edge_query(timestamptz) AS SELECT array_agg(id ORDER BY id) FROM edge_ids WHERE snowflake_timestamp(id) %s $1', op);
        EXECUTE format('EXECUTE edge_query(%L)', bound) INTO result;
        DEALLOCATE edge_query;
    ELSE
        EXECUTE format('SELECT array_agg(id ORDER BY id) FROM edge_ids WHERE snowflake_timestamp(id) %s %L::timestamptz', op, bound)
            INTO result;
    END IF;
    RETURN result;
END;
$$;
CREATE TEMP TABLE bounds (label text, bound timestamptz);
INSERT INTO bounds VALUES
    ('exact ms', '2023-11-14 22:13:20+00'),
    ('sub-ms', '2023-11-14 22:13:20.0005+00'),
    ('just below a ms', '2023-11-14 22:13:19.999999+00'),
    ('epoch', '2010-11-04 01:42:54.657+00'),
    ('before epoch', '2000-01-01 00:00+00'),
    ('last ms of 2080', '2080-07-10 17:30:30.208+00'),
    ('after 2080', '2090-01-01 00:00+00'),
    ('infinity', 'infinity'),
    ('-infinity', '-infinity'),
    ('null', NULL);
SELECT b.label, o.op,
       coalesce(array_length(pg_temp.matching(o.op, b.bound, false, false), 1), 0) AS rows,
       pg_temp.matching(o.op, b.bound, true, false)
           IS NOT DISTINCT FROM pg_temp.matching(o.op, b.bound, false, false) AS same_literal,
       pg_temp.matching(o.op, b.bound, true, true)
           IS NOT DISTINCT FROM pg_temp.matching(o.op, b.bound, false, true) AS same_parameter
FROM bounds b, (VALUES ('<'), ('<='), ('='), ('>='), ('>')) AS o(op)
ORDER BY b.label, o.op;

-- A helper dropped from under the hook is looked up again, not called by a stale OID: the query
-- then goes without the added condition, in the same session that cached the functions.
EXPLAIN (COSTS OFF) SELECT count(*) FROM readings WHERE snowflake_timestamp(id) >= '2025-12-01 10:00+00';
ALTER EXTENSION snowflake DROP FUNCTION snowflake_min_id(timestamptz);
DROP FUNCTION snowflake_min_id(timestamptz);
EXPLAIN (COSTS OFF) SELECT count(*) FROM readings WHERE snowflake_timestamp(id) >= '2025-12-01 10:00+00';
SELECT count(*) FROM readings WHERE snowflake_timestamp(id) >= '2025-12-01 10:00+00';

RESET enable_seqscan;
DROP TABLE readings, sensors, edge_ids;
DROP EXTENSION snowflake;
CREATE EXTENSION snowflake;
