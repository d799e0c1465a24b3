-- snowflake_nextval() on a server with shared_preload_libraries and node ids 7 / 13.
CREATE EXTENSION IF NOT EXISTS snowflake;
SET timezone = 'UTC';

-- The configured node ids are in every id, and the timestamp is the current time.
SELECT snowflake_datacenter_id(id) AS dc, snowflake_machine_id(id) AS m,
       abs(extract(epoch FROM snowflake_timestamp(id) - clock_timestamp())) < 5 AS timestamp_is_now
FROM (SELECT snowflake_nextval() AS id) s;

-- One million ids in one statement: distinct, strictly increasing in the order they were made,
-- all with this node's ids, and every millisecond holds at most 4,096 of them.
CREATE TEMP TABLE million AS
SELECT n, snowflake_nextval() AS id FROM generate_series(1, 1000000) AS n;
SELECT count(*) AS ids, count(DISTINCT id) AS distinct_ids,
       bool_and(snowflake_datacenter_id(id) = 7 AND snowflake_machine_id(id) = 13) AS own_node
FROM million;
SELECT count(*) AS not_increasing
FROM (SELECT id, lag(id) OVER (ORDER BY n) AS previous FROM million) s
WHERE id <= previous;
SELECT max(per_ms) <= 4096 AS within_layout
FROM (SELECT count(*) AS per_ms FROM million GROUP BY snowflake_unix_ms(id)) s;
-- Within a millisecond the sequence counts 0, 1, 2, ... with no gap inside one statement.
SELECT count(*) AS gapped_milliseconds
FROM (SELECT snowflake_unix_ms(id) AS ms, min(snowflake_sequence(id)) AS lo,
             max(snowflake_sequence(id)) AS hi, count(*) AS n
      FROM million GROUP BY 1) s
WHERE hi - lo + 1 <> n;

-- The typical use: a primary key that fills itself.
CREATE TABLE events (
    id bigint PRIMARY KEY DEFAULT snowflake_nextval(),
    payload text NOT NULL
);
INSERT INTO events (payload) SELECT 'event ' || n FROM generate_series(1, 10000) AS n;
SELECT count(*) AS rows, count(DISTINCT id) AS distinct_ids,
       min(id) > (SELECT max(id) FROM million) AS after_earlier_ids
FROM events;

-- Rows made in the last minute, found through the primary key with the range helpers.
SELECT count(*) AS recent_rows
FROM events
WHERE id >= snowflake_min_id(clock_timestamp() - interval '1 minute')
  AND id < snowflake_min_id(clock_timestamp() + interval '1 minute');

-- Parallel workers draw from the same shared state as the leader (a temporary table is never
-- scanned in parallel, so the rows come from a regular one).
CREATE TABLE rows_to_scan AS SELECT n FROM generate_series(1, 200000) AS n;
ANALYZE rows_to_scan;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET parallel_leader_participation = off;
SET max_parallel_workers_per_gather = 2;
EXPLAIN (VERBOSE, COSTS OFF) SELECT snowflake_nextval() AS id FROM rows_to_scan;
SELECT count(*) AS ids, count(DISTINCT id) AS distinct_ids
FROM (SELECT snowflake_nextval() AS id FROM rows_to_scan) s;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET parallel_leader_participation;
RESET max_parallel_workers_per_gather;
DROP TABLE rows_to_scan;

DROP TABLE events;
