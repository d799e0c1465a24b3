-- The snowflake type (1.6): a bigint that PostgreSQL's JSON functions write as a string, with the
-- casts, operators and index support of doc/design.md "The snowflake type".
CREATE EXTENSION IF NOT EXISTS snowflake;
SET timezone = 'UTC';

-- Stored as bigint is: eight bytes, by value, aligned alike.
SELECT t.typlen, t.typbyval, t.typalign, t.typstorage, t.typcategory,
       t.typlen = b.typlen AND t.typbyval = b.typbyval AND t.typalign = b.typalign AS as_bigint
FROM pg_type AS t, pg_type AS b WHERE t.oid = 'snowflake'::regtype AND b.oid = 'bigint'::regtype;

-- Text in and out: decimal digits, spaces and one sign as bigint reads them.
SELECT '0'::snowflake, ' +42 '::snowflake, '-0'::snowflake,
       '9223372036854775807'::snowflake, '1541815603606036480'::snowflake;
SELECT '-1'::snowflake;
SELECT '9223372036854775808'::snowflake;
SELECT ''::snowflake;
SELECT '12a'::snowflake;
SELECT '0x10'::snowflake;
SELECT '1.5'::snowflake;
-- Input errors are soft where PostgreSQL asks for them (16: pg_input_is_valid; 17: COPY's
-- ON_ERROR ignore), as bigint's are.
DO $$
DECLARE
    soft boolean := true;
    copied bigint := 2;
BEGIN
    IF current_setting('server_version_num')::int >= 160000 THEN
        EXECUTE $q$SELECT NOT pg_input_is_valid('-1', 'snowflake')
                          AND NOT pg_input_is_valid('12a', 'snowflake')
                          AND NOT pg_input_is_valid('9223372036854775808', 'snowflake')
                          AND pg_input_is_valid('12', 'snowflake')$q$ INTO soft;
    END IF;
    IF current_setting('server_version_num')::int >= 170000 THEN
        CREATE TEMP TABLE soft_copy (id snowflake);
        PERFORM set_config('client_min_messages', 'warning', true);
        EXECUTE $q$COPY soft_copy FROM PROGRAM 'printf "1\n-1\nabc\n2\n"'
                   WITH (ON_ERROR ignore)$q$;
        SELECT count(*) INTO copied FROM soft_copy;
        DROP TABLE soft_copy;
        PERFORM set_config('client_min_messages', 'notice', true);
    END IF;
    RAISE NOTICE 'soft input errors: %, rows copied past bad ones: %', soft, copied;
END
$$;

-- Casts: integers and numeric in, checked; bigint and numeric out.
SELECT 5::snowflake, 5::smallint::snowflake, 5::bigint::snowflake, 2.5::snowflake,
       5::snowflake::bigint, 5::snowflake::numeric, 5::snowflake::text;
SELECT (-1)::snowflake;
SELECT (-1)::bigint::snowflake;
SELECT (-1)::smallint::snowflake;
SELECT (-0.5)::snowflake;
SELECT 9223372036854775808::numeric::snowflake;
SELECT 'NaN'::numeric::snowflake;
SELECT 5::snowflake::integer, 5::snowflake::smallint, 5::snowflake::double precision,
       5::snowflake::real;
SELECT 2147483648::snowflake::integer;
SELECT castsource::regtype, casttarget::regtype, castcontext, castmethod
FROM pg_cast WHERE 'snowflake'::regtype IN (castsource, casttarget) ORDER BY 1, 2;

-- No operator or operator class of its own: comparisons, sorting, hashing and indexes are
-- bigint's, reached through the binary cast (LEAKPROOF as bigint's are, so that policies and
-- security_barrier views let them reach an index); the casts in, whose errors name the value,
-- are not LEAKPROOF.
SELECT (SELECT count(*) FROM pg_operator
        WHERE 'snowflake'::regtype IN (oprleft, oprright)) AS operators,
       (SELECT count(*) FROM pg_opclass WHERE opcintype = 'snowflake'::regtype) AS classes;
SELECT bool_or(proleakproof) AS any_cast_leakproof FROM pg_proc
WHERE proname = 'snowflake' AND prorettype = 'snowflake'::regtype;

-- A table keyed by the type, fed by snowflake_nextval() through the cast on assignment.
CREATE TABLE typed_orders (
    id snowflake PRIMARY KEY DEFAULT snowflake_nextval(),
    legacy_id bigint,
    note text
);
INSERT INTO typed_orders (legacy_id, note)
SELECT g, 'order ' || g FROM generate_series(1, 2000) AS g;
INSERT INTO typed_orders (id, legacy_id, note) VALUES
    (1541815603606036480, 1541815603606036480, 'known'),
    (7, 7, 'small');
-- min() and max() keep the type (1.9), so JSON writes them as strings.
SELECT count(*), count(DISTINCT id), min(id) < max(id) AS ordered,
       pg_typeof(max(id)) AS max_type, to_json(max(id))::text ~ '^"' AS max_as_string
FROM typed_orders;
SELECT snowflake_datacenter_id(id), snowflake_machine_id(id), count(*)
FROM typed_orders WHERE note <> 'known' AND note <> 'small' GROUP BY 1, 2;
-- Binary out is bigint's eight bytes.
SELECT snowflake_send(id) = int8send(id) AS same_bytes FROM typed_orders WHERE note = 'known';

-- JSON: every id is a string, exact, whichever function writes it; bigint stays a number.
SELECT to_json(id), to_jsonb(id), to_json(legacy_id) FROM typed_orders WHERE note = 'known';
SELECT row_to_json(o) FROM typed_orders AS o WHERE note = 'known';
SELECT json_agg(id ORDER BY id), jsonb_agg(id ORDER BY id) FROM typed_orders WHERE id < 2000;
SELECT jsonb_build_object('id', id), json_build_array(id, legacy_id)
FROM typed_orders WHERE note = 'known';
SELECT to_json(array_agg(id ORDER BY id)) FROM typed_orders WHERE id < 2000;
SELECT to_jsonb(o) ->> 'id' = id::text AS exact
FROM typed_orders AS o WHERE note = 'known';
-- And back: a JSON string or number read into the type, through records and ->>.
SELECT * FROM json_populate_record(NULL::typed_orders,
                                   '{"id": "1541815603606036480", "legacy_id": 1, "note": "n"}');
SELECT * FROM jsonb_populate_record(NULL::typed_orders, '{"id": 1541815603606036480}');
SELECT * FROM jsonb_to_record('{"id": "1541815603606036480"}') AS r (id snowflake);
SELECT * FROM json_to_record('{"id": 1541815603606036480}') AS r (id snowflake);
SELECT ('{"id": "1541815603606036480"}'::jsonb ->> 'id')::snowflake;
SELECT * FROM jsonb_to_record('{"id": -5}') AS r (id snowflake);
SELECT * FROM jsonb_to_record('{"id": 1.5}') AS r (id snowflake);
SELECT count(*) FROM typed_orders
WHERE id IN (SELECT (j ->> 'id')::snowflake
             FROM jsonb_array_elements((SELECT jsonb_agg(to_jsonb(o)) FROM typed_orders AS o)) AS j);

-- Ordinary queries find one meaning: literals, bigint values and columns, IN, UNION, COALESCE.
SELECT note FROM typed_orders WHERE id = 7;
SELECT note FROM typed_orders WHERE 7 = id;
SELECT note FROM typed_orders WHERE id = 7::smallint;
SELECT note FROM typed_orders WHERE id = 1541815603606036480;
SELECT note FROM typed_orders WHERE id = '1541815603606036480';
SELECT note FROM typed_orders WHERE id = legacy_id AND id < 2000;
SELECT note FROM typed_orders WHERE id IN (7, 8, 9);
SELECT note FROM typed_orders WHERE id IN (7::bigint, 1541815603606036480);
SELECT note FROM typed_orders WHERE id = ANY ('{7,8}'::snowflake[]);
SELECT pg_typeof(coalesce(id, 0)) AS with_zero, pg_typeof(coalesce(0, id)) AS zero_first,
       pg_typeof(coalesce(id, legacy_id)) AS with_bigint, pg_typeof(id + 1) AS plus_one,
       pg_typeof(sum(id)) AS sum, pg_typeof(greatest(id, 0)) AS greatest
FROM typed_orders WHERE note = 'small' GROUP BY id;
SELECT pg_typeof(x) FROM (SELECT id AS x FROM typed_orders UNION SELECT legacy_id FROM typed_orders)
    AS u LIMIT 1;
-- No operator compares an id with a fraction (42883), as none compares bigint with one.
DO $$
BEGIN
    PERFORM id = 1.5 FROM typed_orders;
EXCEPTION WHEN undefined_function THEN
    RAISE NOTICE 'id = 1.5: %', SQLSTATE;
END
$$;

-- The index serves comparisons with the type, bigint, integer and smallint, and min()/max().
ANALYZE typed_orders;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT * FROM typed_orders WHERE id = 7;
EXPLAIN (COSTS OFF) SELECT * FROM typed_orders WHERE id = 7::bigint;
EXPLAIN (COSTS OFF) SELECT * FROM typed_orders WHERE id = 7::smallint;
EXPLAIN (COSTS OFF) SELECT * FROM typed_orders WHERE 7::bigint < id;
EXPLAIN (COSTS OFF) SELECT * FROM typed_orders WHERE id IN (7::bigint, 8::bigint);
EXPLAIN (COSTS OFF) SELECT * FROM typed_orders
WHERE id BETWEEN snowflake_min_id('2026-01-01') AND snowflake_max_id('2026-02-01');
CREATE FUNCTION pg_temp.plan_lines(query text) RETURNS SETOF text
LANGUAGE plpgsql AS $$
BEGIN
    RETURN QUERY EXECUTE 'EXPLAIN (COSTS OFF) ' || query;
END
$$;
CREATE FUNCTION pg_temp.plan_has(query text, node text) RETURNS boolean
LANGUAGE sql AS $$
SELECT EXISTS (SELECT FROM pg_temp.plan_lines(query) AS line WHERE strpos(line, node) > 0)
$$;
SELECT pg_temp.plan_has('SELECT min(id), max(id) FROM typed_orders',
                        'Index Only Scan Backward using typed_orders_pkey') AS max_by_index,
       pg_temp.plan_has('SELECT min(id), max(id) FROM typed_orders',
                        'Index Only Scan using typed_orders_pkey') AS min_by_index;
-- They are planned as bigint's over the column (the planner hook), which is what lets the index
-- answer them above; at every query level, with the call's ORDER BY, DISTINCT and FILTER, the
-- values are bigint's and the type is kept. A window's call runs the type's own aggregate.
SELECT pg_typeof(min(id)) AS min_type, min(id) = 7 AS right_min,
       max(id) = (SELECT id FROM typed_orders ORDER BY id DESC LIMIT 1) AS right_max,
       max(id ORDER BY note) = max(id) AS with_order, max(DISTINCT id) = max(id) AS with_distinct,
       min(id) FILTER (WHERE note <> 'small') = 1541815603606036480 AS with_filter
FROM typed_orders;
SELECT (SELECT pg_typeof(max(o.id)) FROM (VALUES (1)) AS v) AS outer_call_in_sublink
FROM typed_orders AS o;
WITH m AS (SELECT max(id) AS m FROM typed_orders) SELECT pg_typeof(m) AS in_cte FROM m;
SELECT pg_typeof(top) AS in_from, top = 1541815603606036480 AS right_value
FROM (SELECT max(id) AS top FROM typed_orders WHERE id < 2000000000000000000) AS s;
SELECT pg_typeof(max(id) OVER ()) AS in_window, max(id) OVER () = (SELECT max(id) FROM typed_orders)
    AS window_value
FROM typed_orders LIMIT 1;
SELECT max(id) IS NULL AS empty_is_null FROM typed_orders WHERE false;
SELECT json_agg(r)::text ~ '^\[\{"max":"1541815603606036480"\}\]$' AS rest_style_json
FROM (SELECT max(id) FROM typed_orders WHERE note = 'known') AS r;
-- An aggregate of a role's own of the same name and argument is hers, never planned as bigint's.
CREATE SCHEMA own_aggregates;
CREATE FUNCTION own_aggregates.first_of(snowflake, snowflake) RETURNS snowflake
LANGUAGE sql IMMUTABLE AS 'SELECT coalesce($1, $2)';
CREATE AGGREGATE own_aggregates.max(snowflake) (SFUNC = own_aggregates.first_of, STYPE = snowflake);
SELECT own_aggregates.max(id ORDER BY id) AS her_max_is_the_first FROM typed_orders;
DROP SCHEMA own_aggregates CASCADE;
EXPLAIN (COSTS OFF) SELECT id FROM typed_orders ORDER BY id DESC LIMIT 3;
PREPARE by_bigint(bigint) AS SELECT note FROM typed_orders WHERE id = $1;
EXPLAIN (COSTS OFF) EXECUTE by_bigint(7);
EXECUTE by_bigint(7);
DEALLOCATE by_bigint;
RESET enable_seqscan;
RESET enable_bitmapscan;

-- A bigint foreign key and a snowflake one reference the type's key, enforced both ways; an
-- integer one follows an ON UPDATE CASCADE.
CREATE TABLE typed_lines (order_id bigint REFERENCES typed_orders, quantity integer);
INSERT INTO typed_lines SELECT id, 1 FROM typed_orders;
INSERT INTO typed_lines VALUES (8, 1);
CREATE TABLE typed_refs (order_id snowflake REFERENCES typed_orders);
INSERT INTO typed_refs SELECT id FROM typed_orders WHERE id < 2000;
DELETE FROM typed_orders WHERE id = 7;
CREATE TABLE typed_cascade (id snowflake PRIMARY KEY);
CREATE TABLE typed_cascade_refs (ref integer REFERENCES typed_cascade ON UPDATE CASCADE);
INSERT INTO typed_cascade VALUES (1);
INSERT INTO typed_cascade_refs VALUES (1);
UPDATE typed_cascade SET id = 2;
SELECT ref FROM typed_cascade_refs;
ANALYZE typed_lines;
ANALYZE typed_refs;
-- Deduplication (btequalimage): an index of repeated values is as small as bigint's.
CREATE TABLE typed_repeats (id snowflake);
CREATE TABLE bigint_repeats (id bigint);
INSERT INTO typed_repeats SELECT 5 FROM generate_series(1, 50000);
INSERT INTO bigint_repeats SELECT 5 FROM generate_series(1, 50000);
CREATE INDEX typed_repeats_id ON typed_repeats (id);
CREATE INDEX bigint_repeats_id ON bigint_repeats (id);
SELECT pg_relation_size('typed_repeats_id') = pg_relation_size('bigint_repeats_id') AS same_size,
       pg_relation_size('typed_repeats_id') < 50000 * 8 AS deduplicated;

-- Joins: merge and hash, with the type on both sides and with bigint on one.
SET enable_nestloop = off;
SET enable_hashjoin = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM typed_orders AS o JOIN typed_lines AS l ON o.id = l.order_id;
SELECT count(*) FROM typed_orders AS o JOIN typed_lines AS l ON o.id = l.order_id;
RESET enable_hashjoin;
SET enable_mergejoin = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM typed_orders AS o JOIN typed_lines AS l ON o.id = l.order_id;
SELECT count(*) FROM typed_orders AS o JOIN typed_lines AS l ON o.id = l.order_id;
EXPLAIN (COSTS OFF) SELECT count(*) FROM typed_orders AS o JOIN typed_refs AS r ON o.id = r.order_id;
SELECT count(*) FROM typed_orders AS o JOIN typed_refs AS r ON o.id = r.order_id;
RESET enable_mergejoin;
RESET enable_nestloop;
-- Hash aggregation and DISTINCT.
SET enable_sort = off;
SELECT count(*) FROM (SELECT DISTINCT id FROM typed_orders) AS d;
RESET enable_sort;

-- Subqueries of bigint, integer and smallint values against ids: semi joins made unique by
-- hashing or sorting either side, hashed NOT IN, merge joins sorting an integer side.
CREATE TABLE typed_small (y integer, z smallint, r bigint);
INSERT INTO typed_small SELECT g, g, g FROM generate_series(0, 500) AS g;
INSERT INTO typed_small VALUES (7, 7, 7);
ANALYZE typed_small;
SELECT count(*) FROM typed_orders WHERE id IN (SELECT y FROM typed_small);
SELECT count(*) FROM typed_orders WHERE id IN (SELECT z FROM typed_small);
SELECT count(*) FROM typed_orders WHERE id IN (SELECT r FROM typed_small);
SELECT count(*) FROM typed_orders WHERE id NOT IN (SELECT y FROM typed_small);
SELECT count(*) FROM typed_orders WHERE id NOT IN (SELECT z FROM typed_small);
SELECT count(*) FROM typed_orders WHERE id NOT IN (SELECT r FROM typed_small);
SELECT count(*) FROM typed_orders WHERE EXISTS (SELECT 1 FROM typed_small WHERE r = id);
SELECT count(*) FROM typed_orders WHERE id = ANY (SELECT y FROM typed_small);
SELECT count(*) FROM typed_small WHERE r IN (SELECT id FROM typed_orders);
SET enable_hashjoin = off;
SET enable_nestloop = off;
SELECT count(*) FROM typed_orders AS o JOIN typed_small AS s ON o.id = s.y;
SELECT o.id, s.z FROM typed_orders AS o JOIN typed_small AS s ON o.id = s.z ORDER BY o.id LIMIT 2;
RESET enable_hashjoin;
RESET enable_nestloop;
-- The type's indexes are of bigint's default classes, in the integer families.
CREATE INDEX typed_orders_hash ON typed_orders USING hash (id);
CREATE INDEX typed_orders_brin ON typed_orders USING brin (id);
SELECT i.indexrelid::regclass AS index, c.opcname, f.opfname
FROM pg_index AS i JOIN pg_opclass AS c ON c.oid = i.indclass[0]
JOIN pg_opfamily AS f ON f.oid = c.opcfamily
WHERE i.indrelid = 'typed_orders'::regclass ORDER BY 1::text;
DROP INDEX typed_orders_hash, typed_orders_brin;

-- Tables without the type plan as before the type: an integer constant on one side of a bigint
-- join reaches the other side, and a bigint range partition is pruned by it.
CREATE TABLE plain_a (x bigint);
CREATE TABLE plain_b (x bigint);
CREATE TABLE plain_p (x bigint) PARTITION BY RANGE (x);
CREATE TABLE plain_p1 PARTITION OF plain_p FOR VALUES FROM (0) TO (100);
CREATE TABLE plain_p2 PARTITION OF plain_p FOR VALUES FROM (100) TO (200);
CREATE FUNCTION pg_temp.plan_count(query text, node text) RETURNS integer
LANGUAGE sql AS $$
SELECT count(*)::integer FROM pg_temp.plan_lines(query) AS line WHERE strpos(line, node) > 0
$$;
SELECT pg_temp.plan_count('SELECT * FROM plain_a AS a JOIN plain_b AS b ON a.x = b.x
                           WHERE a.x = 5', '(x = 5)') AS filters_on_both,
       pg_temp.plan_count('SELECT * FROM plain_a AS a JOIN plain_p AS p ON a.x = p.x
                           WHERE a.x = 5', 'plain_p2') AS second_partition_scans;

-- Hash partitions spread ids by bigint's hash, and a query for one id reaches one partition.
CREATE TABLE typed_hashed (id snowflake PRIMARY KEY) PARTITION BY HASH (id);
CREATE TABLE typed_hashed_0 PARTITION OF typed_hashed FOR VALUES WITH (MODULUS 2, REMAINDER 0);
CREATE TABLE typed_hashed_1 PARTITION OF typed_hashed FOR VALUES WITH (MODULUS 2, REMAINDER 1);
INSERT INTO typed_hashed SELECT id FROM typed_orders;
SELECT count(*) > 500 AS both_used FROM typed_hashed_0 HAVING count(*) < 1500;
EXPLAIN (COSTS OFF) SELECT * FROM typed_hashed WHERE id = 1541815603606036480;
SELECT satisfies_hash_partition('typed_hashed'::regclass, 2, 1, 1541815603606036480::snowflake);
-- The hashes are bigint's, so each id goes to the partition the same bigint goes to.
CREATE TABLE bigint_hashed (id bigint PRIMARY KEY) PARTITION BY HASH (id);
CREATE TABLE bigint_hashed_0 PARTITION OF bigint_hashed FOR VALUES WITH (MODULUS 2, REMAINDER 0);
CREATE TABLE bigint_hashed_1 PARTITION OF bigint_hashed FOR VALUES WITH (MODULUS 2, REMAINDER 1);
INSERT INTO bigint_hashed SELECT id FROM typed_orders;
SELECT (SELECT array_agg(id::bigint ORDER BY id) FROM typed_hashed_0)
     = (SELECT array_agg(id ORDER BY id) FROM bigint_hashed_0) AS same_placement;

-- Range partitions by time, bounds from snowflake_min_id(); time predicates prune them.
CREATE TABLE typed_events (id snowflake NOT NULL, payload text) PARTITION BY RANGE (id);
CREATE TABLE typed_events_2026_01 PARTITION OF typed_events
    FOR VALUES FROM (snowflake_min_id('2026-01-01')) TO (snowflake_min_id('2026-02-01'));
CREATE TABLE typed_events_2026_02 PARTITION OF typed_events
    FOR VALUES FROM (snowflake_min_id('2026-02-01')) TO (snowflake_min_id('2026-03-01'));
INSERT INTO typed_events
SELECT snowflake_encode(t, 1, 2, 0), 'e'
FROM generate_series('2026-01-01 00:00+00'::timestamptz, '2026-02-28 23:00+00', '1 hour') AS t;
CREATE INDEX ON typed_events (id);
EXPLAIN (COSTS OFF) SELECT count(*) FROM typed_events
WHERE snowflake_timestamp(id) >= '2026-02-10' AND snowflake_timestamp(id) < '2026-02-11';
SELECT count(*) FROM typed_events
WHERE snowflake_timestamp(id) >= '2026-02-10' AND snowflake_timestamp(id) < '2026-02-11';
SET snowflake.time_predicates = off;
SELECT count(*) FROM typed_events
WHERE snowflake_timestamp(id) >= '2026-02-10' AND snowflake_timestamp(id) < '2026-02-11';
RESET snowflake.time_predicates;
EXPLAIN (COSTS OFF) SELECT count(*) FROM typed_events WHERE id >= snowflake_min_id('2026-02-01');

-- BRIN minmax over time-ordered ids.
CREATE TABLE typed_log (id snowflake NOT NULL);
INSERT INTO typed_log SELECT snowflake_encode(t, 1, 2, 0)
FROM generate_series('2026-01-01 00:00+00'::timestamptz, '2026-01-31 00:00+00', '1 minute') AS t;
CREATE INDEX typed_log_brin ON typed_log USING brin (id);
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM typed_log WHERE id >= snowflake_min_id('2026-01-30');
SELECT count(*) FROM typed_log WHERE id >= snowflake_min_id('2026-01-30');
RESET enable_seqscan;

-- Window frames by id distance (in_range): one minute of ids back reaches the row before.
SELECT id, count(*) OVER (ORDER BY id RANGE BETWEEN 251658240000 PRECEDING AND CURRENT ROW)
FROM typed_log ORDER BY id LIMIT 3;

-- Binary COPY: the type's eight bytes read back into the type and into bigint.
\copy (SELECT id FROM typed_orders WHERE note = 'known') TO 'results/type_copy.bin' WITH (FORMAT binary)
CREATE TABLE typed_copy (id snowflake);
CREATE TABLE bigint_copy (id bigint);
\copy typed_copy FROM 'results/type_copy.bin' WITH (FORMAT binary)
\copy bigint_copy FROM 'results/type_copy.bin' WITH (FORMAT binary)
SELECT (SELECT id FROM typed_copy) = (SELECT id FROM bigint_copy) AS same;
\copy (SELECT -1::bigint) TO 'results/type_negative.bin' WITH (FORMAT binary)
\copy typed_copy FROM 'results/type_negative.bin' WITH (FORMAT binary)
