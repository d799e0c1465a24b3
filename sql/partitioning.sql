-- A table range-partitioned by month on its Snowflake key: time predicates prune partitions, and
-- DEFAULT snowflake_nextval() routes new rows into the current month.
CREATE EXTENSION IF NOT EXISTS snowflake;
SET timezone = 'UTC';

CREATE TABLE measurements (
    id bigint NOT NULL DEFAULT snowflake_nextval(),
    value double precision NOT NULL,
    PRIMARY KEY (id)
) PARTITION BY RANGE (id);
CREATE TABLE measurements_2026_01 PARTITION OF measurements
    FOR VALUES FROM (snowflake_min_id('2026-01-01')) TO (snowflake_min_id('2026-02-01'));
CREATE TABLE measurements_2026_02 PARTITION OF measurements
    FOR VALUES FROM (snowflake_min_id('2026-02-01')) TO (snowflake_min_id('2026-03-01'));
CREATE TABLE measurements_2026_03 PARTITION OF measurements
    FOR VALUES FROM (snowflake_min_id('2026-03-01')) TO (snowflake_min_id('2026-04-01'));
CREATE TABLE measurements_2026_04 PARTITION OF measurements
    FOR VALUES FROM (snowflake_min_id('2026-04-01')) TO (snowflake_min_id('2026-05-01'));

-- One row an hour through the four months, each in the partition of its month.
INSERT INTO measurements (id, value)
SELECT snowflake_encode(t, 2, 3, 0), extract(epoch FROM t)
FROM generate_series('2026-01-01 00:00+00'::timestamptz, '2026-04-30 23:00+00', '1 hour') AS t;
SELECT tableoid::regclass AS partition, count(*),
       min(snowflake_timestamp(id)), max(snowflake_timestamp(id))
FROM measurements GROUP BY 1 ORDER BY 1;

-- A time range on snowflake_timestamp(id) prunes to the partitions it touches.
EXPLAIN (COSTS OFF) SELECT count(*) FROM measurements
WHERE snowflake_timestamp(id) >= '2026-02-10' AND snowflake_timestamp(id) < '2026-03-05';
SELECT count(*) FROM measurements
WHERE snowflake_timestamp(id) >= '2026-02-10' AND snowflake_timestamp(id) < '2026-03-05';
EXPLAIN (COSTS OFF) SELECT count(*) FROM measurements
WHERE snowflake_timestamp(id) = '2026-04-15 12:00+00';
-- With a parameter (a generic plan), pruning happens when the executor starts.
PREPARE measurements_since(timestamptz) AS
SELECT count(*) FROM measurements WHERE snowflake_timestamp(id) >= $1;
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE measurements_since('2026-04-20');
EXECUTE measurements_since('2026-04-20');
RESET plan_cache_mode;
DEALLOCATE measurements_since;
-- Without the rewrite, every partition is scanned.
SET snowflake.time_predicates = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM measurements
WHERE snowflake_timestamp(id) >= '2026-02-10' AND snowflake_timestamp(id) < '2026-03-05';
RESET snowflake.time_predicates;

-- Monthly partitions around today: a new row goes into the current month's.
CREATE TABLE live_measurements (
    id bigint NOT NULL DEFAULT snowflake_nextval(),
    value double precision NOT NULL
) PARTITION BY RANGE (id);
DO $$
DECLARE
    month_start timestamptz := date_trunc('month', now());
BEGIN
    EXECUTE format('CREATE TABLE live_previous PARTITION OF live_measurements FOR VALUES FROM (%s) TO (%s)',
                   snowflake_min_id(month_start - interval '1 month'), snowflake_min_id(month_start));
    EXECUTE format('CREATE TABLE live_current PARTITION OF live_measurements FOR VALUES FROM (%s) TO (%s)',
                   snowflake_min_id(month_start), snowflake_min_id(month_start + interval '1 month'));
    EXECUTE format('CREATE TABLE live_next PARTITION OF live_measurements FOR VALUES FROM (%s) TO (%s)',
                   snowflake_min_id(month_start + interval '1 month'),
                   snowflake_min_id(month_start + interval '2 months'));
END;
$$;
INSERT INTO live_measurements (value) VALUES (1), (2), (3);
-- Each row is in the partition of its own month, and that month is the current one (or, for a
-- run that crosses midnight at the end of a month, the next).
SELECT count(*) AS rows,
       bool_and(tableoid = CASE WHEN date_trunc('month', snowflake_timestamp(id)) = date_trunc('month', now())
                                THEN 'live_current'::regclass ELSE 'live_next'::regclass END) AS in_own_month,
       bool_and(tableoid IN ('live_current'::regclass, 'live_next'::regclass)) AS current_month
FROM live_measurements;

DROP TABLE measurements, live_measurements;
