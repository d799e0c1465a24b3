-- Time partitions (version 1.7): snowflake_partition_table() and snowflake_maintain_partitions().
-- The clock is the real one, so the output shows only what holds at any date: each partition
-- spans one period of its time zone, the periods are contiguous, and what is created or kept.
CREATE EXTENSION IF NOT EXISTS snowflake;
SET timezone = 'UTC';
-- A schema of its own, beside the tables the other tests leave.
CREATE SCHEMA partitions;
SET search_path = partitions, public;

-- Every partition of a table with its range as local times, and whether it starts where the one
-- before it ended.
CREATE FUNCTION pg_temp.spans(parent regclass, zone text)
RETURNS TABLE (partition regclass, from_local timestamp, to_local timestamp, contiguous boolean)
LANGUAGE sql AS $$
SELECT c.oid::regclass, snowflake_timestamp(b.lo) AT TIME ZONE zone,
       snowflake_timestamp(b.hi) AT TIME ZONE zone,
       coalesce(lag(b.hi) OVER (ORDER BY b.lo) = b.lo, true)
FROM pg_inherits AS i JOIN pg_class AS c ON c.oid = i.inhrelid,
     LATERAL (SELECT (regexp_match(pg_get_expr(c.relpartbound, c.oid), 'FROM \(''(\d+)''\)'))[1]::bigint AS lo,
                     (regexp_match(pg_get_expr(c.relpartbound, c.oid), 'TO \(''(\d+)''\)'))[1]::bigint AS hi) AS b
WHERE i.inhparent = parent ORDER BY b.lo
$$;

-- Monthly, from the oldest key: a hand-made partition of January 2026 holding a row is adopted,
-- and every month from February to three past the current one is created; months of 28, 30 and
-- 31 days follow each other without a gap.
CREATE TABLE events (id bigint NOT NULL DEFAULT snowflake_nextval(), body text, PRIMARY KEY (id))
    PARTITION BY RANGE (id);
CREATE TABLE events_jan PARTITION OF events
    FOR VALUES FROM (snowflake_min_id('2026-01-01')) TO (snowflake_min_id('2026-02-01'));
INSERT INTO events VALUES (snowflake_min_id('2026-01-15'), 'old');
SELECT action, count(*) > 0 AS some FROM snowflake_partition_table('events', '1 month')
GROUP BY action ORDER BY action;
SELECT count(*) = 1 AS named_by_month FROM pg_temp.spans('events', 'UTC')
WHERE partition::text = 'events_p' || to_char(now() AT TIME ZONE 'UTC', 'YYYY_MM');
SELECT bool_and(contiguous) AS contiguous,
       bool_and(date_trunc('month', from_local) = from_local
                AND to_local = from_local + interval '1 month') AS whole_months,
       count(*) FILTER (WHERE to_local - from_local = interval '28 days') > 0 AS has_28,
       count(*) FILTER (WHERE to_local - from_local = interval '31 days') > 0 AS has_31,
       max(to_local) = date_trunc('month', now() AT TIME ZONE 'UTC') + interval '4 months' AS ahead_3
FROM pg_temp.spans('events', 'UTC');
SELECT partition FROM pg_temp.spans('events', 'UTC') LIMIT 3;
-- Idempotent: the second call does nothing, and says so.
SELECT * FROM snowflake_maintain_partitions('events');
SELECT * FROM snowflake_maintain_partitions();
-- New rows go into the current month's partition.
INSERT INTO events (body) VALUES ('now');
SELECT tableoid::regclass::text = 'events_p' || to_char(now() AT TIME ZONE 'UTC', 'YYYY_MM')
    AS current_month FROM events WHERE body = 'now';
-- The view says how far ahead the partitions reach.
SELECT parent, every, ahead, reaches_until = date_trunc('month', now()) + interval '4 months' AS reach,
       time_left > interval '90 days' AS months_left
FROM snowflake_partition_reach;
-- A partition adopted far ahead, after a gap, does not lengthen the reach: an insert into the gap
-- would fail. The reach is the unbroken run from now on.
CREATE TABLE events_far PARTITION OF events
    FOR VALUES FROM (snowflake_min_id(date_trunc('month', now()) + interval '14 months'))
    TO (snowflake_min_id(date_trunc('month', now()) + interval '15 months'));
SELECT partitions, reaches_until = date_trunc('month', now()) + interval '4 months' AS reach
FROM snowflake_partition_reach WHERE parent = 'events'::regclass;
DROP TABLE events_far;
-- The view reads bounds as maintenance does (snowflake_partition_ranges()). A partition FROM
-- (MINVALUE) that holds now() starts the run; a sub-partitioned partition takes rows only with a
-- default partition or hash partitions for every remainder; a default partition takes any row.
CREATE TABLE edges (id bigint NOT NULL) PARTITION BY RANGE (id);
SELECT count(*) FROM snowflake_partition_table('edges', '1 month', 0);
DO $$ BEGIN EXECUTE format('DROP TABLE %s', (SELECT partition FROM snowflake_partition_ranges('edges'))); END $$;
CREATE TABLE edges_min PARTITION OF edges
    FOR VALUES FROM (MINVALUE) TO (snowflake_min_id(date_trunc('month', now()) + interval '1 month'));
CREATE TABLE edges_next PARTITION OF edges
    FOR VALUES FROM (snowflake_min_id(date_trunc('month', now()) + interval '1 month'))
    TO (snowflake_min_id(date_trunc('month', now()) + interval '2 months')) PARTITION BY HASH (id);
SELECT partition, lower_id IS NULL AS from_minvalue, starts = '-infinity' AS from_the_beginning,
       takes_rows
FROM snowflake_partition_ranges('edges') ORDER BY upper_id;
SELECT partitions, reaches_from, reaches_until = date_trunc('month', now()) + interval '1 month'
    AS reach_ends_before_the_childless_partition
FROM snowflake_partition_reach WHERE parent = 'edges'::regclass;
CREATE TABLE edges_next_0 PARTITION OF edges_next FOR VALUES WITH (MODULUS 2, REMAINDER 0);
SELECT reaches_until = date_trunc('month', now()) + interval '1 month' AS half_the_hash_is_a_gap
FROM snowflake_partition_reach WHERE parent = 'edges'::regclass;
CREATE TABLE edges_next_1 PARTITION OF edges_next FOR VALUES WITH (MODULUS 4, REMAINDER 1);
CREATE TABLE edges_next_3 PARTITION OF edges_next FOR VALUES WITH (MODULUS 4, REMAINDER 3);
SELECT reaches_until = date_trunc('month', now()) + interval '2 months' AS every_remainder_reaches
FROM snowflake_partition_reach WHERE parent = 'edges'::regclass;
CREATE TABLE edges_default PARTITION OF edges DEFAULT;
SELECT partitions, reaches_until, time_left FROM snowflake_partition_reach
WHERE parent = 'edges'::regclass;
DROP TABLE edges;

-- snowflake_timestamp(id) predicates prune to the partitions they touch.
EXPLAIN (COSTS OFF) SELECT count(*) FROM events
WHERE snowflake_timestamp(id) >= '2026-02-10' AND snowflake_timestamp(id) < '2026-03-05';

-- Daily in Europe/Berlin from October 24, 2026: the day clocks go back has 25 hours, each
-- partition starts at local midnight, and they are contiguous.
CREATE TABLE berlin (id bigint NOT NULL, PRIMARY KEY (id)) PARTITION BY RANGE (id);
CREATE TABLE berlin_first PARTITION OF berlin
    FOR VALUES FROM (snowflake_min_id('2026-10-24 00:00 Europe/Berlin'))
    TO (snowflake_min_id('2026-10-25 00:00 Europe/Berlin'));
INSERT INTO berlin VALUES (snowflake_min_id('2026-10-24 12:00 Europe/Berlin'));
SELECT action, count(*) > 0 AS some
FROM snowflake_partition_table('berlin', '1 day', 2, time_zone => 'Europe/Berlin')
GROUP BY action ORDER BY action;
SELECT bool_and(contiguous) AS contiguous,
       bool_and(from_local::time = '00:00' AND to_local = from_local + interval '1 day') AS local_days,
       (SELECT snowflake_timestamp(max(hi)) - snowflake_timestamp(min(lo)) FROM (
            SELECT (regexp_match(pg_get_expr(relpartbound, oid), 'FROM \(''(\d+)''\)'))[1]::bigint AS lo,
                   (regexp_match(pg_get_expr(relpartbound, oid), 'TO \(''(\d+)''\)'))[1]::bigint AS hi
            FROM pg_class WHERE relname = 'berlin_p2026_10_25') AS b) AS october_25
FROM pg_temp.spans('berlin', 'Europe/Berlin');

-- Weekly in America/New_York (clocks go back on November 1, 2026): ISO weeks from Monday
-- midnight, one of 169 hours.
CREATE TABLE ny (id bigint NOT NULL) PARTITION BY RANGE (id);
CREATE TABLE ny_first PARTITION OF ny
    FOR VALUES FROM (snowflake_min_id('2026-10-26 00:00 America/New_York'))
    TO (snowflake_min_id('2026-11-02 00:00 America/New_York'));
INSERT INTO ny VALUES (snowflake_min_id('2026-10-27 America/New_York'));
SELECT action, count(*) > 0 AS some
FROM snowflake_partition_table('ny', '1 week', 1, time_zone => 'America/New_York')
GROUP BY action ORDER BY action;
SELECT bool_and(contiguous) AS contiguous,
       bool_and(extract(isodow FROM from_local) = 1 AND from_local::time = '00:00') AS mondays,
       bool_and(to_local = from_local + interval '7 days') AS weeks
FROM pg_temp.spans('ny', 'America/New_York');
SELECT snowflake_timestamp(snowflake_min_id('2026-11-02 00:00 America/New_York'))
       - snowflake_timestamp(snowflake_min_id('2026-10-26 00:00 America/New_York')) AS first_week;
SELECT count(*) = 1 AS named_by_iso_week FROM pg_temp.spans('ny', 'America/New_York')
WHERE partition::text = 'ny_p' || to_char(now() AT TIME ZONE 'America/New_York', 'IYYY"w"IW');

-- Hourly: the current hour and two ahead, named by their UTC start.
CREATE TABLE ticks (id snowflake NOT NULL) PARTITION BY RANGE (id);
SELECT action, count(*) FROM snowflake_partition_table('ticks', '1 hour', 2) GROUP BY action;
SELECT bool_and(contiguous) AS contiguous, bool_and(to_local = from_local + interval '1 hour') AS hours,
       bool_or(partition::text = 'ticks_p' || to_char(now() AT TIME ZONE 'UTC', 'YYYY_MM_DD_HH24'))
           AS named_by_hour
FROM pg_temp.spans('ticks', 'UTC');
INSERT INTO ticks VALUES (snowflake_nextval());

-- A hand-made partition further ahead than the setup asks is adopted; the months before it are
-- left alone past the ones the setup asks for.
CREATE TABLE far (id bigint NOT NULL) PARTITION BY RANGE (id);
CREATE TABLE far_later PARTITION OF far
    FOR VALUES FROM (snowflake_min_id(date_trunc('month', now()) + interval '6 months'))
    TO (snowflake_min_id(date_trunc('month', now()) + interval '7 months'));
SELECT action, count(*) FROM snowflake_partition_table('far', '1 month', 1)
GROUP BY action ORDER BY action;
SELECT * FROM snowflake_maintain_partitions('far');

-- Refused: an interval that is not one unit, a count ahead outside 0 to 1000, a retention that is
-- not positive, a hand-made partition that does not line up (named), a default partition (with
-- the reason), a table not partitioned on its key.
SELECT * FROM snowflake_partition_table('events', '2 months');
SELECT * FROM snowflake_partition_table('events', '1 month', 1001);
SELECT * FROM snowflake_partition_table('events', '1 month', -1);
SELECT * FROM snowflake_partition_table('events', '1 month', 3, retain => '0 days');
CREATE TABLE odd (id bigint NOT NULL) PARTITION BY RANGE (id);
CREATE TABLE odd_mid PARTITION OF odd
    FOR VALUES FROM (snowflake_min_id('2026-01-15')) TO (snowflake_min_id('2026-02-15'));
SELECT * FROM snowflake_partition_table('odd', '1 month');
SELECT count(*) FROM snowflake_catalog.snowflake_partitioned_tables WHERE parent = 'odd'::regclass;
CREATE TABLE with_default (id bigint NOT NULL) PARTITION BY RANGE (id);
CREATE TABLE with_default_rest PARTITION OF with_default DEFAULT;
SELECT * FROM snowflake_partition_table('with_default', '1 month');
CREATE TABLE by_text (id bigint NOT NULL, tag text NOT NULL) PARTITION BY RANGE (tag);
SELECT * FROM snowflake_partition_table('by_text', '1 month');
CREATE TABLE plain (id bigint);
SELECT * FROM snowflake_partition_table('plain', '1 month');
-- At the edges: 1000 ahead is accepted (the table is what is refused), a retention negative in
-- any one of its fields is not.
\set VERBOSITY sqlstate
SELECT * FROM snowflake_partition_table('plain', '1 month', 1000);
SELECT * FROM snowflake_partition_table('plain', '1 month', 3, retain => '-1 hour');
SELECT * FROM snowflake_partition_table('plain', '1 month', 3, retain => '-1 day');
SELECT * FROM snowflake_partition_table('plain', '1 month', 3, retain => '-1 month');
-- A snapshot older than the call's locks is refused, for one table and for every table.
CREATE TABLE in_old_snapshot (id bigint NOT NULL) PARTITION BY RANGE (id);
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT * FROM snowflake_partition_table('in_old_snapshot', '1 day', 0);
ROLLBACK;
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT * FROM snowflake_maintain_partitions();
ROLLBACK;
DROP TABLE in_old_snapshot;
-- A column of a temporary type would go with its session: refused, as a temporary table is.
CREATE DOMAIN pg_temp.passing_note AS text;
CREATE TABLE with_passing_column (id bigint NOT NULL, note pg_temp.passing_note)
    PARTITION BY RANGE (id);
SELECT * FROM snowflake_partition_table('with_passing_column', '1 day');
DROP TABLE with_passing_column;
\set VERBOSITY default
-- A partition that ends exactly where the retention starts is expired (in one transaction, so
-- that now() is one instant).
BEGIN;
CREATE TABLE at_edge (id bigint NOT NULL) PARTITION BY RANGE (id);
CREATE TABLE at_edge_yesterday PARTITION OF at_edge
    FOR VALUES FROM (snowflake_min_id(date_trunc('day', now()) - interval '1 day'))
    TO (snowflake_min_id(date_trunc('day', now())));
SELECT partition = 'partitions.at_edge_yesterday' AS ends_where_retention_starts, action
FROM snowflake_partition_table('at_edge', '1 day', 0, retain => now() - date_trunc('day', now()))
WHERE action <> 'created' ORDER BY 2;
ROLLBACK;

-- Retention: a partition whose whole range ends at least the retention before both now and the
-- newest key is detached (and with drop_expired dropped), never a newer one; the gap left by a
-- missing day is filled from the oldest key on.
CREATE TABLE logs (id bigint NOT NULL) PARTITION BY RANGE (id);
CREATE TABLE logs_old PARTITION OF logs
    FOR VALUES FROM (snowflake_min_id(date_trunc('day', now()) - interval '3 days'))
    TO (snowflake_min_id(date_trunc('day', now()) - interval '2 days'));
CREATE TABLE logs_recent PARTITION OF logs
    FOR VALUES FROM (snowflake_min_id(date_trunc('day', now()) - interval '1 day'))
    TO (snowflake_min_id(date_trunc('day', now())));
INSERT INTO logs VALUES (snowflake_min_id(date_trunc('day', now()) - interval '3 days') + 1),
                        (snowflake_min_id(date_trunc('day', now()) - interval '1 day') + 1);
-- The newest key is from yesterday's start: logs_old ends less than 2 days before it, so it is
-- kept. A row of now lets it go.
SELECT partition = 'partitions.logs_old' AS is_old, action
FROM snowflake_partition_table('logs', '1 day', 1, retain => '2 days')
WHERE action <> 'created' ORDER BY 2, 1;
INSERT INTO logs VALUES (snowflake_nextval());
SELECT partition = 'partitions.logs_old' AS is_old, action
FROM snowflake_maintain_partitions('logs');
SELECT relname FROM pg_class WHERE relname = 'logs_old' AND NOT relispartition;
SELECT count(*) FROM logs;
SELECT * FROM snowflake_maintain_partitions('logs');
SELECT partition = 'partitions.logs_recent' AS is_recent, action
FROM snowflake_partition_table('logs', '1 day', 1, retain => '1 day', drop_expired => true)
WHERE action <> 'adopted';
SELECT count(*) AS logs_recent_left FROM pg_class WHERE relname = 'logs_recent';
SELECT count(*) FROM logs;
-- A table whose newest row is older than the retention keeps the retention's span before that
-- row, and a warning says so (its detail has the clock's reading and the row's time).
CREATE TABLE quiet (id bigint NOT NULL) PARTITION BY RANGE (id);
CREATE TABLE quiet_old PARTITION OF quiet
    FOR VALUES FROM (snowflake_min_id(date_trunc('day', now()) - interval '3 days'))
    TO (snowflake_min_id(date_trunc('day', now()) - interval '2 days'));
INSERT INTO quiet VALUES (snowflake_min_id(date_trunc('day', now()) - interval '3 days') + 1);
\set VERBOSITY terse
SELECT partition = 'partitions.quiet_old' AS is_old, action
FROM snowflake_partition_table('quiet', '1 day', 0, retain => '1 day', drop_expired => true)
WHERE action LIKE 'kept%' ORDER BY 1;
\set VERBOSITY default
SELECT count(*) FROM quiet;
DROP TABLE quiet;

-- A table owned by another role: every statement runs as her (the partitions are hers), and
-- her code (a partial index's predicate that the planner folds, a CHECK) runs as her, never as
-- the caller (it would say so); a stranger is refused before anything is locked, and cannot write
-- the setup.
CREATE ROLE partition_owner;
CREATE ROLE partition_stranger;
CREATE SCHEMA hers AUTHORIZATION partition_owner;
SET ROLE partition_owner;
CREATE SEQUENCE hers.calls;
CREATE FUNCTION hers.note() RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    PERFORM pg_catalog.nextval('hers.calls');
    IF current_user <> 'partition_owner' THEN
        RAISE NOTICE 'her code ran as %', current_user;
    END IF;
    RETURN true;
END
$$;
CREATE TABLE hers.t (id bigint NOT NULL CHECK (hers.note())) PARTITION BY RANGE (id);
CREATE TABLE hers.t_jan PARTITION OF hers.t
    FOR VALUES FROM (snowflake_min_id('2026-01-01 UTC')) TO (snowflake_min_id('2026-02-01 UTC'));
INSERT INTO hers.t VALUES (snowflake_min_id('2026-01-02 UTC'));
CREATE INDEX ON hers.t (id) WHERE hers.note();
GRANT USAGE ON SCHEMA hers TO partition_stranger;
RESET ROLE;
SELECT setval('hers.calls', 1, false);
SELECT action, count(*) > 0 AS some FROM snowflake_partition_table('hers.t', '1 month', 1)
GROUP BY action ORDER BY action;
SELECT is_called AS her_code_ran FROM hers.calls;
SELECT DISTINCT pg_get_userbyid(relowner) FROM pg_class
WHERE oid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = 'hers.t'::regclass);
SET ROLE partition_stranger;
\set VERBOSITY sqlstate
SELECT * FROM snowflake_partition_table('hers.t', '1 month');
SELECT * FROM snowflake_maintain_partitions('hers.t');
SELECT count(*) FROM snowflake_maintain_partitions();
INSERT INTO snowflake_catalog.snowflake_partitioned_tables VALUES ('hers.t', '1 day', 1, '1 hour', 'UTC', true);
\set VERBOSITY default
RESET ROLE;
SET ROLE partition_owner;
SELECT * FROM snowflake_maintain_partitions('hers.t');
RESET ROLE;

-- The settings her code makes end with the step that ran it: her CHECK's set_config() of the
-- session's search_path, run as her when a partition is attached, does not outlive the call.
SET ROLE partition_owner;
CREATE FUNCTION hers.sets_path(integer) RETURNS boolean IMMUTABLE LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_catalog.set_config('search_path', 'hers, pg_catalog', false);
    RETURN true;
END
$$;
CREATE TABLE hers.paths (id bigint NOT NULL, CHECK (hers.sets_path(1))) PARTITION BY RANGE (id);
RESET ROLE;
SET search_path = partitions, public;
SELECT count(*) > 0 AS created FROM snowflake_partition_table('hers.paths', '1 day', 1);
SHOW search_path;
-- And from one step to the next: a setting her code makes as one partition is attached is gone
-- when the next is, and row_security, off while her keys are read, is on again after that step.
SET ROLE partition_owner;
CREATE FUNCTION hers.sees_earlier_steps(integer) RETURNS boolean IMMUTABLE LANGUAGE plpgsql AS $$
BEGIN
    IF pg_catalog.current_setting('hers.mark', true) <> '' THEN
        RAISE NOTICE 'a setting made in an earlier step is still set';
    END IF;
    IF pg_catalog.current_setting('row_security') = 'off' THEN
        RAISE NOTICE 'row_security is off in a step that is not a read';
    END IF;
    PERFORM pg_catalog.set_config('hers.mark', 'set', false);
    RETURN true;
END
$$;
CREATE TABLE hers.steps (id bigint NOT NULL, CHECK (hers.sees_earlier_steps(1)))
    PARTITION BY RANGE (id);
RESET ROLE;
SELECT action, count(*) FROM snowflake_partition_table('hers.steps', '1 day', 2) GROUP BY 1;

-- Her code runs in a security-restricted operation: even SET ROLE to herself is refused there.
SET ROLE partition_owner;
CREATE FUNCTION hers.tries_set_role(integer) RETURNS boolean IMMUTABLE LANGUAGE plpgsql AS $$
BEGIN
    BEGIN
        PERFORM pg_catalog.set_config('role', 'partition_owner', true);
        RAISE NOTICE 'her code ran outside a security-restricted operation';
    EXCEPTION WHEN insufficient_privilege THEN
        NULL;
    END;
    RETURN true;
END
$$;
CREATE TABLE hers.restricted (id bigint NOT NULL, CHECK (hers.tries_set_role(1)))
    PARTITION BY RANGE (id);
RESET ROLE;
SELECT count(*) > 0 AS partitioned FROM snowflake_partition_table('hers.restricted', '1 day', 0);

-- Her policies do not hide her keys from the read that finds the oldest period: with FORCE ROW
-- LEVEL SECURITY they would apply to her, so the table is refused instead.
SET ROLE partition_owner;
CREATE TABLE hers.hidden (id bigint NOT NULL) PARTITION BY RANGE (id);
CREATE TABLE hers.hidden_jan PARTITION OF hers.hidden
    FOR VALUES FROM (snowflake_min_id('2026-01-01 UTC')) TO (snowflake_min_id('2026-02-01 UTC'));
INSERT INTO hers.hidden VALUES (snowflake_min_id('2026-01-02 UTC'));
ALTER TABLE hers.hidden ENABLE ROW LEVEL SECURITY;
ALTER TABLE hers.hidden FORCE ROW LEVEL SECURITY;
CREATE POLICY hides_everything ON hers.hidden USING (false);
RESET ROLE;
\set VERBOSITY sqlstate
SELECT * FROM snowflake_partition_table('hers.hidden', '1 month', 0);
\set VERBOSITY default
SELECT count(*) AS hidden_setups FROM snowflake_catalog.snowflake_partitioned_tables
WHERE parent = 'hers.hidden'::regclass;

-- A time zone is named: an abbreviation or a POSIX offset would align differently elsewhere.
CREATE TABLE zoned (id bigint NOT NULL) PARTITION BY RANGE (id);
SELECT * FROM snowflake_partition_table('zoned', '1 day', 1, NULL, 'IST');
SELECT * FROM snowflake_partition_table('zoned', '1 day', 1, NULL, 'UTC+99');

-- A partition more than 100000 periods back (here an hour of 2011 for hourly partitions) would
-- need that many boundaries: refused, and nothing is set up. Alone, it is as far from the clock
-- as a clock decades ahead would be: the error names the clock (its text has the clock's reading,
-- test/t/033_retention_clock.pl checks it). With a partition of now, the span of the partitions
-- is what is too long: the error says to choose a longer interval.
CREATE TABLE ancient (id bigint NOT NULL) PARTITION BY RANGE (id);
CREATE TABLE ancient_2011 PARTITION OF ancient
    FOR VALUES FROM (snowflake_min_id('2011-01-01 00:00+00')) TO (snowflake_min_id('2011-01-01 01:00+00'));
\set VERBOSITY sqlstate
SELECT * FROM snowflake_partition_table('ancient', '1 hour', 1);
\set VERBOSITY default
CREATE TABLE ancient_now PARTITION OF ancient
    FOR VALUES FROM (snowflake_min_id(date_trunc('hour', now())))
    TO (snowflake_min_id(date_trunc('hour', now()) + interval '1 hour'));
SELECT * FROM snowflake_partition_table('ancient', '1 hour', 1);
SELECT count(*) AS ancient_partitions FROM pg_inherits WHERE inhparent = 'ancient'::regclass;
SELECT count(*) AS ancient_setups FROM snowflake_catalog.snowflake_partitioned_tables WHERE parent = 'ancient'::regclass;
DROP TABLE ancient;

-- Maintenance of every table goes on past one that fails: its setup written by hand with an
-- interval the functions never accept, it gets a warning and a row, the others their periods.
SELECT count(*) > 0 AS set_up FROM snowflake_partition_table('zoned', '1 day', 1);
UPDATE snowflake_catalog.snowflake_partitioned_tables SET every = '2 days' WHERE parent = 'hers.paths'::regclass;
DO $$
DECLARE
    p regclass;
BEGIN
    SELECT inhrelid::regclass INTO p FROM pg_inherits WHERE inhparent = 'zoned'::regclass
    ORDER BY inhrelid DESC LIMIT 1;
    EXECUTE format('DROP TABLE %s', p);
END
$$;
SELECT parent, action ~ '^(created|failed: )' AS reported, action ~ '^failed: ' AS failed
FROM snowflake_maintain_partitions() WHERE parent IN ('zoned'::regclass, 'hers.paths'::regclass)
ORDER BY 1::text, 2;
SELECT count(*) AS zoned_partitions FROM pg_inherits WHERE inhparent = 'zoned'::regclass;

-- Her code that raises query_canceled itself (an index expression, folded when a new partition's
-- index is built, that does so under the maintenance of every table) fails her table alone: only
-- a cancel that the server raised ends the call.
CREATE FUNCTION hers.cancels(integer) RETURNS integer LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    IF pg_catalog.current_setting('lock_timeout') = '1s' THEN
        RAISE EXCEPTION 'not a real cancel' USING ERRCODE = 'query_canceled';
    END IF;
    RETURN $1;
END
$$;
ALTER FUNCTION hers.cancels(integer) OWNER TO partition_owner;
CREATE TABLE hers.cancelling (id bigint NOT NULL, v integer) PARTITION BY RANGE (id);
ALTER TABLE hers.cancelling OWNER TO partition_owner;
SELECT count(*) > 0 AS set_up FROM snowflake_partition_table('hers.cancelling', '1 day', 0);
CREATE INDEX ON hers.cancelling ((v + hers.cancels(1)));
CREATE TABLE after_cancelling (id bigint NOT NULL) PARTITION BY RANGE (id);
SELECT count(*) > 0 AS set_up FROM snowflake_partition_table('after_cancelling', '1 day', 0);
UPDATE snowflake_catalog.snowflake_partitioned_tables SET ahead = 1
WHERE parent IN ('hers.cancelling'::regclass, 'after_cancelling'::regclass);
SELECT parent, action FROM snowflake_maintain_partitions()
WHERE parent IN ('hers.cancelling'::regclass, 'after_cancelling'::regclass) ORDER BY 1::text, 2;
SELECT count(*) AS partitions_after_hers FROM pg_inherits
WHERE inhparent = 'after_cancelling'::regclass;

-- Her code that maintains every table itself, while the maintenance of every table runs it: the
-- inner call runs within her table's time limit, and a cancel after it is an ordinary cancel (an
-- inner limit once left a SIGINT handler that handed each signal to itself: the next cancel
-- crashed the server).
CREATE FUNCTION hers.maintains_every_table(integer) RETURNS integer LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    IF pg_catalog.current_setting('lock_timeout') = '1s'
       AND pg_catalog.current_setting('hers.nested', true) IS DISTINCT FROM 'yes' THEN
        PERFORM pg_catalog.set_config('hers.nested', 'yes', true);
        PERFORM pg_catalog.count(*) FROM public.snowflake_maintain_partitions();
    END IF;
    RETURN $1;
END
$$;
ALTER FUNCTION hers.maintains_every_table(integer) OWNER TO partition_owner;
CREATE TABLE hers.nesting (id bigint NOT NULL, v integer) PARTITION BY RANGE (id);
ALTER TABLE hers.nesting OWNER TO partition_owner;
SELECT count(*) > 0 AS set_up FROM snowflake_partition_table('hers.nesting', '1 day', 0);
CREATE INDEX ON hers.nesting ((v + hers.maintains_every_table(1)));
UPDATE snowflake_catalog.snowflake_partitioned_tables SET ahead = 1 WHERE parent = 'hers.nesting'::regclass;
SET client_min_messages = error;
SELECT parent, action FROM snowflake_maintain_partitions()
WHERE parent = 'hers.nesting'::regclass;
RESET client_min_messages;
SELECT pg_cancel_backend(pg_backend_pid());
SELECT 'the session goes on' AS after_the_cancel;

-- The configuration table's trigger is its own: no role but its owner may use it, and on
-- another table or as a statement trigger it refuses instead of reading a row it does not have.
CREATE TABLE hers.strangers (x integer);
ALTER TABLE hers.strangers OWNER TO partition_stranger;
SET ROLE partition_stranger;
CREATE TRIGGER t BEFORE INSERT ON hers.strangers FOR EACH STATEMENT
    EXECUTE FUNCTION snowflake_leave_out_setup_without_table();
RESET ROLE;
CREATE TABLE misused (x integer);
CREATE TRIGGER t BEFORE INSERT ON misused FOR EACH STATEMENT
    EXECUTE FUNCTION snowflake_leave_out_setup_without_table();
INSERT INTO misused VALUES (1);
DROP TABLE misused;
CREATE TABLE misused_rows (x integer);
CREATE TRIGGER t BEFORE INSERT ON misused_rows FOR EACH ROW
    EXECUTE FUNCTION snowflake_leave_out_setup_without_table();
\set VERBOSITY sqlstate
INSERT INTO misused_rows VALUES (1);
\set VERBOSITY default
SELECT count(*) AS misused_rows FROM misused_rows;
DROP TABLE misused_rows;

-- Two parents whose names share their first 54 bytes both get partitions: a name cut to fit is
-- followed by a tag of the whole name. A relation that has the name of a partition to be made is
-- named before anything is created.
CREATE TABLE long_name_of_a_parent_that_needs_cutting_when_partitioned_a (id bigint NOT NULL)
    PARTITION BY RANGE (id);
CREATE TABLE long_name_of_a_parent_that_needs_cutting_when_partitioned_b (id bigint NOT NULL)
    PARTITION BY RANGE (id);
SELECT count(DISTINCT p.partition) AS partitions,
       max(length(split_part(p.partition, '.', 2))) = 63 AS fit,
       bool_and(p.partition ~
                '^partitions\.long_name_of_a_parent_that_needs_cutting_when_[0-9a-f]{8}_p\d{4}_\d{2}$')
           AS tagged
FROM unnest(ARRAY['long_name_of_a_parent_that_needs_cutting_when_partitioned_a',
                  'long_name_of_a_parent_that_needs_cutting_when_partitioned_b']::regclass[]) AS t,
     LATERAL snowflake_partition_table(t, '1 month', 0) AS p;
CREATE TABLE squat (id bigint NOT NULL) PARTITION BY RANGE (id);
DO $$
BEGIN
    EXECUTE format('CREATE TABLE %I (x integer)', 'squat_p'
                   || to_char(date_trunc('month', now() AT TIME ZONE 'UTC') + interval '1 month',
                              'YYYY_MM'));
    PERFORM snowflake_partition_table('squat', '1 month', 1);
EXCEPTION WHEN duplicate_table THEN
    RAISE NOTICE 'refused: %', regexp_replace(SQLERRM, '\d{4}_\d{2}', 'YYYY_MM', 'g');
END
$$;
SELECT count(*) AS squat_partitions FROM pg_inherits WHERE inhparent = 'squat'::regclass;
SELECT count(*) AS squat_setups FROM snowflake_catalog.snowflake_partitioned_tables WHERE parent = 'squat'::regclass;

-- A temporary table is refused: maintenance in other sessions could not reach it; so is one
-- typed by a temporary type, which goes with its session too.
CREATE TEMP TABLE passing (id bigint NOT NULL) PARTITION BY RANGE (id);
SELECT * FROM snowflake_partition_table('passing', '1 day');
DROP TABLE passing;
CREATE TYPE pg_temp.passing_row AS (id bigint);
CREATE TABLE typed_by_passing OF pg_temp.passing_row PARTITION BY RANGE (id);
SELECT * FROM snowflake_partition_table('typed_by_passing', '1 day');
DROP TABLE typed_by_passing;
DROP TYPE pg_temp.passing_row;

-- snowflake_partition_ranges() reads only a table partitioned on one bigint or snowflake column:
-- another key's bounds are no ids.
CREATE TABLE ranged_by_text (k text) PARTITION BY RANGE (k);
CREATE TABLE ranged_by_text_a PARTITION OF ranged_by_text FOR VALUES FROM ('a') TO ('m');
SELECT count(*) AS rows_of_a_text_key FROM snowflake_partition_ranges('ranged_by_text');
DROP TABLE ranged_by_text;
-- snowflake_partition_boundaries() refuses what maintenance would.
SELECT count(*) FROM snowflake_partition_boundaries('1 hour', 'UTC', '2011-01-01', '2030-01-01');
SELECT count(*) FROM snowflake_partition_boundaries('1 day', 'UTC', 'infinity', 'infinity');
SELECT count(*) FROM snowflake_partition_boundaries('1 day', 'UTC', '2026-02-01', '2026-01-01');
SELECT count(*) FROM snowflake_partition_boundaries('30 days', 'UTC', '2026-01-01', '2026-02-01');
SELECT count(*) FROM snowflake_partition_boundaries('1 day', 'IST', '2026-01-01', '2026-02-01');
SELECT count(*) AS days_of_january FROM snowflake_partition_boundaries('1 day', 'UTC', '2026-01-01', '2026-02-01');
-- Hours start where the local clock shows minute 0, 45 minutes past the hour in UTC here.
SELECT count(*) AS hours_in_kathmandu, min(starts) AS first_hour
FROM snowflake_partition_boundaries('1 hour', 'Asia/Kathmandu', '2025-01-15 00:00+00',
                                    '2025-01-16 00:00+00');

-- Not set up.
SELECT * FROM snowflake_maintain_partitions('odd');

SET client_min_messages = warning;
DROP SCHEMA partitions CASCADE;
DROP SCHEMA hers CASCADE;
RESET client_min_messages;
DROP ROLE partition_owner;
DROP ROLE partition_stranger;
DELETE FROM snowflake_catalog.snowflake_partitioned_tables;
RESET search_path;
