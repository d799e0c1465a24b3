-- Time partitions in every time zone of pg_timezone_names (but the posix/ copies of the others),
-- with every interval of snowflake_partition_intervals(), over the zones' whole history within
-- the time of Snowflake ids that PostgreSQL knows: from the epoch (2010-11-04) to 2040, past the
-- last year of the time zone data, whose rules then repeat. The periods that
-- snowflake_partition_boundaries() computes, as maintenance computes them, are contiguous, none
-- empty and none overlapping, start where the interval does in local time (midnight, Monday, the
-- first of the month, quarter or year, minute 0 of a local hour), last as long as the local
-- calendar makes them, have names of their own, and are the same when computed from a later
-- start: after the retention has removed the partitions before a change of offset, the
-- boundaries maintenance computes from the oldest partition left still line up with it.
-- Months, quarters and years are checked over the whole span in each zone that changes its
-- offset (two years in one that does not). Days, weeks and hours are checked around the first
-- change of each kind in each zone (its offsets before and after, and the local time it lands
-- on), and every interval from a later start after each such change: Asia/Pyongyang's half hour
-- of 2018-05-04 and the day that Pacific/Apia skipped, 2011-12-30, are among them.
CREATE EXTENSION IF NOT EXISTS snowflake;
SET timezone = 'UTC';
CREATE TEMP TABLE zones AS
SELECT name FROM pg_timezone_names WHERE name !~ '^(posix|right)/';
CREATE FUNCTION pg_temp.utc_offset(zone text, at timestamptz) RETURNS interval
    LANGUAGE sql IMMUTABLE AS $$ SELECT (at AT TIME ZONE zone) - (at AT TIME ZONE 'UTC') $$;
-- The weeks in which each zone's offset changes, found a week at a time (a change undone within
-- one week would go unseen: a scan day by day finds no other in the data of 2026), then the day
-- of each change.
CREATE TEMP TABLE change_weeks AS
SELECT z.name, w AS week
FROM zones AS z,
     generate_series('2010-11-01 00:00+00'::timestamptz, '2040-01-01 00:00+00', '7 days') AS w
WHERE pg_temp.utc_offset(z.name, w) <> pg_temp.utc_offset(z.name, w + interval '7 days');
CREATE TEMP TABLE change_days AS
SELECT c.name, d AS day
FROM change_weeks AS c,
     generate_series(c.week, c.week + interval '6 days', '1 day') AS d
WHERE pg_temp.utc_offset(c.name, d) <> pg_temp.utc_offset(c.name, d + interval '1 day');
-- Each change with its offsets and the local time it happens at (found to the quarter hour).
CREATE TEMP TABLE all_changes AS
SELECT c.name, c.day, pg_temp.utc_offset(c.name, q) AS before,
       pg_temp.utc_offset(c.name, q + interval '15 minutes') AS after,
       ((q + interval '15 minutes') AT TIME ZONE c.name)::time AS local_time
FROM change_days AS c,
     generate_series(c.day, c.day + interval '1 day' - interval '15 minutes', '15 minutes') AS q
WHERE pg_temp.utc_offset(c.name, q) <> pg_temp.utc_offset(c.name, q + interval '15 minutes');
-- The first change of each kind in each zone: its offsets and the local time it lands on.
CREATE TEMP TABLE changes AS
SELECT DISTINCT ON (name, before, after, local_time) name, day, before, after
FROM all_changes ORDER BY name, before, after, local_time, day;
SELECT count(*) > 400 AS many_zones,
       count(*) FILTER (WHERE name IN (SELECT name FROM changes)) > 200 AS many_with_changes,
       (SELECT count(*) FROM changes) > 500 AS many_kinds_of_change,
       EXISTS (SELECT FROM changes WHERE name = 'Pacific/Apia' AND after - before = interval '1 day')
           AS apia_skips_a_day,
       EXISTS (SELECT FROM changes WHERE name = 'Asia/Pyongyang' AND day = '2018-05-04 00:00+00')
           AS pyongyang_changes_by_half_an_hour
FROM zones;

-- The windows: for months, quarters and years the whole span in a zone that changes, two years in
-- one that does not; for days and weeks, ten days and eight weeks either side of each change; for
-- hours, a day before each change to two days after (one day in a zone that does not change).
CREATE TEMP TABLE windows AS
SELECT z.name, i.every, w.since, w.until
FROM zones AS z
CROSS JOIN snowflake_partition_intervals() AS i
CROSS JOIN LATERAL (
    SELECT '2010-11-05 00:00+00'::timestamptz AS since, '2040-01-01 00:00+00'::timestamptz AS until
    WHERE EXISTS (SELECT FROM changes AS c WHERE c.name = z.name)
    UNION ALL
    SELECT '2025-01-01 00:00+00', '2027-01-01 00:00+00'
    WHERE NOT EXISTS (SELECT FROM changes AS c WHERE c.name = z.name)
) AS w
WHERE i.every >= interval '1 month'
UNION ALL
SELECT c.name, i.every, c.day - i.every * n, c.day + i.every * n
FROM changes AS c
CROSS JOIN (VALUES (interval '1 day', 10), (interval '7 days', 8)) AS i(every, n)
UNION ALL
SELECT c.name, interval '1 hour', c.day - interval '1 day', c.day + interval '2 days'
FROM changes AS c
UNION ALL
SELECT z.name, i.every, '2025-01-15 00:00+00', '2025-01-15 00:00+00'::timestamptz + i.every * 10
FROM zones AS z
CROSS JOIN (VALUES (interval '1 hour'), (interval '1 day'), (interval '7 days')) AS i(every)
WHERE NOT EXISTS (SELECT FROM changes AS c WHERE c.name = z.name);
-- Every interval of the library has windows.
SELECT i.every, EXISTS (SELECT FROM windows AS w WHERE w.every = i.every) AS checked
FROM snowflake_partition_intervals() AS i ORDER BY 1;

CREATE TEMP TABLE periods AS
SELECT w.name, w.every, w.since, b.starts, b.ends, b.name_suffix
FROM windows AS w, LATERAL snowflake_partition_boundaries(w.every, w.name, w.since, w.until) AS b;
CREATE INDEX ON periods (name, every, since, starts);
ANALYZE periods;

-- Every interval has many periods to check.
SELECT every, count(*) > 1000 AS many_periods FROM periods GROUP BY every ORDER BY every;

-- Each check, as the periods that fail it: none.
SELECT 'empty' AS failure, count(*) FROM periods WHERE ends <= starts
UNION ALL
SELECT 'not contiguous (a gap or an overlap)', count(*) FROM (
    SELECT ends, lead(starts) OVER (PARTITION BY name, every, since ORDER BY starts) AS next
    FROM periods) AS p WHERE next IS NOT NULL AND next <> ends
UNION ALL
-- A period that holds the epoch starts there, cut: the first id is its first.
SELECT 'not aligned', count(*) FROM periods
WHERE starts > snowflake_timestamp(0) AND CASE WHEN every = interval '1 hour'
           THEN date_part('minute', starts AT TIME ZONE name) <> 0
                OR date_part('second', starts AT TIME ZONE name) <> 0
           ELSE date_trunc(CASE every WHEN interval '1 day' THEN 'day'
                                      WHEN interval '7 days' THEN 'week'
                                      WHEN interval '1 month' THEN 'month'
                                      WHEN interval '3 months' THEN 'quarter' ELSE 'year' END,
                           starts, name) <> starts END
UNION ALL
SELECT 'too short or too long', count(*) FROM periods
WHERE starts > snowflake_timestamp(0) AND NOT (ends - starts) BETWEEN CASE every WHEN interval '1 hour' THEN interval '30 minutes'
                                             WHEN interval '1 day' THEN interval '20 hours'
                                             WHEN interval '7 days' THEN interval '6 days'
                                             WHEN interval '1 month' THEN interval '27 days'
                                             WHEN interval '3 months' THEN interval '88 days'
                                             ELSE interval '363 days' END
                              AND CASE every WHEN interval '1 hour' THEN interval '2 hours'
                                             WHEN interval '1 day' THEN interval '28 hours'
                                             WHEN interval '7 days' THEN interval '7 days 4 hours'
                                             WHEN interval '1 month' THEN interval '32 days'
                                             WHEN interval '3 months' THEN interval '93 days'
                                             ELSE interval '367 days' END
UNION ALL
SELECT 'a name twice', count(*) FROM (
    SELECT name, every, since, name_suffix FROM periods
    GROUP BY 1, 2, 3, 4 HAVING count(*) > 1) AS twice
UNION ALL
-- From the first period that starts after each change, as the oldest left once the retention has
-- removed those before it, the periods computed from that start are the ones computed from before.
SELECT 'another boundary from a later start', count(*) FROM (
    SELECT l.name, l.every, l.since, b.starts, b.ends, b.name_suffix
    FROM (
        SELECT w.name, w.every, w.since, w.until,
               (SELECT min(p.starts) FROM periods AS p
                WHERE p.name = w.name AND p.every = w.every AND p.since = w.since
                  AND p.starts > c.day + interval '1 day') AS later
        FROM windows AS w
        JOIN changes AS c ON c.name = w.name AND c.day >= w.since AND c.day < w.until
    ) AS l,
    LATERAL snowflake_partition_boundaries(
        l.every, l.name, l.later,
        LEAST(l.until, l.later + GREATEST(interval '60 days', l.every * 3))) AS b
    WHERE l.later IS NOT NULL
    EXCEPT
    SELECT name, every, since, starts, ends, name_suffix FROM periods
) AS from_later
ORDER BY 1;

-- The two zones the rules name: Apia's 29 December 2011 ends where its 31 December starts, and
-- Pyongyang's hour that holds its change lasts 30 minutes.
SELECT starts, ends, name_suffix
FROM snowflake_partition_boundaries('1 day', 'Pacific/Apia', '2011-12-29 12:00+00',
                                    '2011-12-31 12:00+00');
SELECT starts, ends, ends - starts AS lasts, name_suffix
FROM snowflake_partition_boundaries('1 hour', 'Asia/Pyongyang', '2018-05-04 14:00+00',
                                    '2018-05-04 15:30+00');
RESET timezone;
