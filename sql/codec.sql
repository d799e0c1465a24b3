-- Decoding, encoding and the time-range helpers: pure functions, exact at every boundary.
CREATE EXTENSION IF NOT EXISTS snowflake;
SET timezone = 'UTC';

-- The worked example of the format, both ways.
SELECT snowflake_encode(1700000000000, 7, 13, 4095);
SELECT * FROM snowflake_decode(1724551110457221119);
SELECT snowflake_timestamp(1724551110457221119),
       snowflake_unix_ms(1724551110457221119),
       snowflake_datacenter_id(1724551110457221119),
       snowflake_machine_id(1724551110457221119),
       snowflake_sequence(1724551110457221119);
SELECT snowflake_encode('2023-11-14 22:13:20+00'::timestamptz, 7, 13, 4095);

-- The smallest and the largest id.
SELECT * FROM snowflake_decode(0);
SELECT * FROM snowflake_decode(9223372036854775807);
SELECT snowflake_encode(1288834974657, 0, 0, 0) AS smallest,
       snowflake_encode(3487858230208, 31, 31, 4095) AS largest;
SELECT snowflake_encode('2010-11-04 01:42:54.657+00'::timestamptz, 0, 0, 0) AS smallest,
       snowflake_encode('2080-07-10 17:30:30.208999+00'::timestamptz, 31, 31, 4095) AS largest;

-- Every field lands in its own bits.
SELECT snowflake_encode(1288834974658, 0, 0, 0) AS one_ms,
       snowflake_encode(1288834974657, 1, 0, 0) AS datacenter_one,
       snowflake_encode(1288834974657, 0, 1, 0) AS machine_one,
       snowflake_encode(1288834974657, 0, 0, 1) AS sequence_one;

-- Sub-millisecond digits are truncated toward the past.
SELECT snowflake_unix_ms(snowflake_encode('2023-11-14 22:13:20.000999+00'::timestamptz, 0, 0, 0));
SELECT snowflake_timestamp(snowflake_encode('2023-11-14 22:13:20.123456+00'::timestamptz, 0, 0, 0));

-- Round trips over a spread of values.
SELECT count(*) AS round_trips_failed
FROM generate_series(1288834974657, 3487858230208, 21990232555) AS ms,
     generate_series(0, 31, 5) AS dc,
     generate_series(0, 31, 7) AS m,
     (VALUES (0), (1), (2048), (4095)) AS s(seq),
     LATERAL snowflake_decode(snowflake_encode(ms, dc, m, seq)) AS d
WHERE (d.unix_ms, d.datacenter_id, d.machine_id, d.sequence) <> (ms, dc, m, seq)
   OR d.created_at <> to_timestamp(ms / 1000.0);

-- NULL in, NULL out, for every strict function.
SELECT snowflake_decode(NULL) IS NULL AS decode,
       snowflake_timestamp(NULL) IS NULL AS ts,
       snowflake_unix_ms(NULL) IS NULL AS unix_ms,
       snowflake_datacenter_id(NULL) IS NULL AS dc,
       snowflake_machine_id(NULL) IS NULL AS m,
       snowflake_sequence(NULL) IS NULL AS seq,
       snowflake_encode(NULL::bigint, 1, 1, 1) IS NULL AS enc_ms,
       snowflake_encode(1700000000000, NULL, 1, 1) IS NULL AS enc_dc,
       snowflake_encode(NULL::timestamptz, 1, 1, 1) IS NULL AS enc_ts,
       snowflake_min_id(NULL) IS NULL AS min_id,
       snowflake_max_id(NULL) IS NULL AS max_id;

-- Time-range helpers: exact bounds, rounding toward the inside of the range.
SELECT snowflake_min_id('2023-11-14 22:13:20+00') AS min_exact,
       snowflake_max_id('2023-11-14 22:13:20+00') AS max_exact,
       snowflake_min_id('2023-11-14 22:13:20.000001+00') AS min_rounds_up,
       snowflake_max_id('2023-11-14 22:13:20.000999+00') AS max_rounds_down;
SELECT snowflake_min_id('2023-11-14 22:13:20+00') = snowflake_encode(1700000000000, 0, 0, 0) AS min_ok,
       snowflake_max_id('2023-11-14 22:13:20+00') = snowflake_encode(1700000000000, 31, 31, 4095) AS max_ok;

-- They clamp outside the representable range so that range predicates stay exact.
SELECT snowflake_min_id('2010-11-04 01:42:54.657+00') AS min_at_epoch,
       snowflake_max_id('2010-11-04 01:42:54.657+00') AS max_at_epoch,
       snowflake_min_id('2000-01-01+00') AS min_before_epoch,
       snowflake_max_id('2000-01-01+00') AS max_before_epoch,
       snowflake_max_id('2010-11-04 01:42:54.656999+00') AS max_just_before_epoch;
SELECT snowflake_min_id('2090-01-01+00') AS min_after_2080,
       snowflake_max_id('2090-01-01+00') AS max_after_2080,
       snowflake_min_id('-infinity') AS min_neg_inf,
       snowflake_max_id('-infinity') AS max_neg_inf,
       snowflake_min_id('infinity') AS min_pos_inf,
       snowflake_max_id('infinity') AS max_pos_inf;

-- [a, b) in ids selects exactly the ids made in [a, b).
CREATE TEMP TABLE spread AS
SELECT snowflake_encode(ms, 1, 2, seq) AS id
FROM generate_series(1700000000000, 1700000000010) AS ms, (VALUES (0), (4095)) AS s(seq);
SELECT count(*) FILTER (WHERE id >= snowflake_min_id('2023-11-14 22:13:20.002+00')
                          AND id < snowflake_min_id('2023-11-14 22:13:20.005+00')) AS by_id,
       count(*) FILTER (WHERE snowflake_timestamp(id) >= '2023-11-14 22:13:20.002+00'
                          AND snowflake_timestamp(id) < '2023-11-14 22:13:20.005+00') AS by_time,
       count(*) FILTER (WHERE id BETWEEN snowflake_min_id('2023-11-14 22:13:20.0015+00')
                                     AND snowflake_max_id('2023-11-14 22:13:20.0045+00')) AS between_ids
FROM spread;
