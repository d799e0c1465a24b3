-- Time partitions in every time zone of pg_timezone_names (but the posix/ copies of the others),
-- with each interval, over 2025 and 2026: the periods that snowflake_partition_boundaries()
-- computes, as maintenance computes them, are contiguous, start where the interval does in local
-- time (midnight, Monday, the first of the month, minute 0 of a local hour), last as long as the
-- local calendar makes them, have names of their own, and are the same when computed from a
-- later start: after the retention has removed the partitions before a change of offset, the
-- boundaries maintenance computes from the oldest partition left still line up with it. Zones
-- without a change in the two years are checked over two months; hours around each change.
CREATE EXTENSION IF NOT EXISTS snowflake;
SET timezone = 'UTC';
CREATE TEMP TABLE zones AS
SELECT name FROM pg_timezone_names WHERE name !~ '^(posix|right)/';
-- The days on which each zone's offset changes.
CREATE TEMP TABLE changes AS
SELECT z.name, d AS day
FROM zones AS z,
     generate_series('2025-01-01 00:00+00'::timestamptz, '2026-12-31 00:00+00', '1 day') AS d
WHERE (d AT TIME ZONE z.name) - (d AT TIME ZONE 'UTC')
      <> ((d + interval '1 day') AT TIME ZONE z.name) - ((d + interval '1 day') AT TIME ZONE 'UTC');
SELECT count(*) > 400 AS many_zones, count(*) FILTER (WHERE name IN (SELECT name FROM changes)) > 100
    AS many_with_changes
FROM zones;

-- The windows: two years for a zone that changes (two months for one that does not) for days,
-- weeks and months; for hours, a day before each change to two days after (one day for a zone
-- that does not change).
CREATE TEMP TABLE windows AS
SELECT z.name, u.every, w.since, w.until
FROM zones AS z
CROSS JOIN (VALUES (interval '1 day'), (interval '1 week'), (interval '1 month')) AS u(every)
CROSS JOIN LATERAL (
    SELECT '2025-01-01 00:00+00'::timestamptz AS since,
           CASE WHEN EXISTS (SELECT FROM changes AS c WHERE c.name = z.name)
                THEN '2027-01-01 00:00+00'::timestamptz ELSE '2025-03-01 00:00+00' END AS until
) AS w
UNION ALL
SELECT c.name, interval '1 hour', c.day - interval '1 day', c.day + interval '2 days'
FROM changes AS c
UNION ALL
SELECT z.name, interval '1 hour', '2025-01-15 00:00+00', '2025-01-16 00:00+00'
FROM zones AS z WHERE NOT EXISTS (SELECT FROM changes AS c WHERE c.name = z.name);

CREATE TEMP TABLE periods AS
SELECT w.name, w.every, w.since, b.starts, b.ends, b.name_suffix
FROM windows AS w, LATERAL snowflake_partition_boundaries(w.every, w.name, w.since, w.until) AS b;
CREATE INDEX ON periods (name, every, since, starts);
ANALYZE periods;

-- Each check, as the periods that fail it: none.
SELECT 'not contiguous' AS failure, count(*) FROM (
    SELECT ends, lead(starts) OVER (PARTITION BY name, every, since ORDER BY starts) AS next
    FROM periods) AS p WHERE next IS NOT NULL AND next <> ends
UNION ALL
SELECT 'not aligned', count(*) FROM periods
WHERE CASE WHEN every = interval '1 hour'
           THEN date_part('minute', starts AT TIME ZONE name) <> 0
                OR date_part('second', starts AT TIME ZONE name) <> 0
           ELSE date_trunc(CASE every WHEN interval '1 day' THEN 'day'
                                      WHEN interval '1 week' THEN 'week' ELSE 'month' END,
                           starts, name) <> starts END
UNION ALL
SELECT 'too short or too long', count(*) FROM periods
WHERE NOT (ends - starts) BETWEEN CASE every WHEN interval '1 hour' THEN interval '30 minutes'
                                             WHEN interval '1 day' THEN interval '20 hours'
                                             WHEN interval '1 week' THEN interval '6 days 20 hours'
                                             ELSE interval '27 days' END
                              AND CASE every WHEN interval '1 hour' THEN interval '2 hours'
                                             WHEN interval '1 day' THEN interval '28 hours'
                                             WHEN interval '1 week' THEN interval '7 days 4 hours'
                                             ELSE interval '32 days' END
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
    LATERAL snowflake_partition_boundaries(l.every, l.name, l.later,
                                           LEAST(l.until, l.later + interval '60 days')) AS b
    WHERE l.later IS NOT NULL
    EXCEPT
    SELECT name, every, since, starts, ends, name_suffix FROM periods
) AS from_later
ORDER BY 1;
RESET timezone;
