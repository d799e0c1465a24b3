-- Following changes (1.12): tracking a table, the stamps, the tombstones, the reader's pages.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS snowflake;
-- Tables of their own: other files of this suite leave an orders and an events table behind.
CREATE SCHEMA following;
SET search_path = following, public;
CREATE FUNCTION pg_temp.error_of(statement text) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE statement;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END
$$;

CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), note text);
INSERT INTO orders (note) VALUES ('before tracking');
SELECT snowflake_track_changes('orders');
SELECT tracked, version_column, key_columns, began_empty, trimmed_below FROM snowflake_catalog.snowflake_tracked_tables;
-- The row from before tracking has no version, so a cursor older than the tracking is refused,
-- 0 included, since the table was not empty: a reader copies the table first.
SELECT tracked_from AS start FROM snowflake_catalog.snowflake_tracked_tables WHERE tracked = 'orders'::regclass \gset
SELECT regexp_replace(pg_temp.error_of($$SELECT * FROM snowflake_changes(NULL::orders, 0, 10)$$),
                      '[0-9]{10,}', 'N', 'g') AS cursor_before_tracking;
SELECT indexdef FROM pg_indexes WHERE schemaname = 'following' AND tablename = 'orders' ORDER BY indexname;

-- Whatever the statement gives, the version comes from the generator, on insert and on update.
INSERT INTO orders (note, version) VALUES ('one', 5), ('two', 6), ('three', 7);
SELECT count(*) AS stamped FROM orders WHERE version > snowflake_encode(now() - interval '1 minute', 0, 0, 0);
SELECT max(version) AS before_update FROM orders \gset
UPDATE orders SET note = 'one, changed', version = 1 WHERE note = 'one';
SELECT version > :before_update AS restamped FROM orders WHERE note = 'one, changed';
-- COPY and INSERT ... ON CONFLICT take versions too.
COPY orders (id, note, version) FROM STDIN;
1	copied	3
\.
SELECT version > :before_update AS copied_stamped FROM orders WHERE id = 1;
INSERT INTO orders (id, note) VALUES (1, 'conflict') ON CONFLICT (id) DO UPDATE SET note = 'upserted';
SELECT note, version > :before_update AS upserted_stamped FROM orders WHERE id = 1;

-- From the tracking's start: the latest state of each changed row, in version order, then the
-- cursor.
SELECT kind, (data).note FROM snowflake_changes(NULL::orders, :start, 100) ORDER BY version;

-- A delete leaves the key; a changed key reaches the reader as a delete of the old one and the
-- row under the new one; a truncation that rolls back leaves nothing.
SELECT id AS old_key FROM orders WHERE note = 'two' \gset
UPDATE orders SET id = id + 1 WHERE note = 'two';
DELETE FROM orders WHERE note = 'three';
BEGIN;
TRUNCATE orders;
ROLLBACK;
SELECT kind, (data).id = :old_key AS is_old_key, (data).note
FROM snowflake_changes(NULL::orders, :start, 100) WHERE kind <> 'next' ORDER BY version;

-- A key deleted and inserted again reads as the row, not as a delete.
DELETE FROM orders WHERE id = 1;
INSERT INTO orders (id, note) VALUES (1, 'again');
SELECT kind, (data).note FROM snowflake_changes(NULL::orders, :start, 100)
WHERE kind <> 'next' AND (data).id = 1;

-- Pages: a full page's cursor is its last version plus one, and the pages together are the
-- whole list; a page that is not full ends at the bound.
CREATE TEMP TABLE whole AS SELECT version, kind FROM snowflake_changes(NULL::orders, :start, 100);
CREATE TEMP TABLE paged (version bigint, kind text);
DO $$
DECLARE
    cursor_at bigint := (SELECT t.tracked_from FROM snowflake_catalog.snowflake_tracked_tables AS t
                         WHERE t.tracked = 'orders'::regclass);
    page_end bigint;
BEGIN
    FOR page IN 1 .. 20 LOOP
        INSERT INTO paged SELECT c.version, c.kind FROM snowflake_changes(NULL::orders, cursor_at, 2) AS c
            WHERE c.kind <> 'next';
        SELECT c.version INTO page_end FROM snowflake_changes(NULL::orders, cursor_at, 2) AS c
            WHERE c.kind = 'next';
        EXIT WHEN page_end = cursor_at;
        cursor_at := page_end;
    END LOOP;
END
$$;
SELECT (SELECT array_agg(version ORDER BY version) FROM whole WHERE kind <> 'next')
     = (SELECT array_agg(version ORDER BY version) FROM paged) AS pages_make_the_whole;
SELECT version >= snowflake_encode(now() - interval '1 minute', 0, 0, 0) AS quiet_cursor_moves
FROM snowflake_changes(NULL::orders, :start, 1000) WHERE kind = 'next';

-- A truncation is one event; rows after it come after it.
TRUNCATE orders;
INSERT INTO orders (note) VALUES ('after truncation');
SELECT kind, (data).note FROM snowflake_changes(NULL::orders, :start, 100)
WHERE kind IN ('truncate', 'row') ORDER BY version;

-- Partitioned tables: the rows and deletes of every partition.
CREATE TABLE events (id bigint NOT NULL DEFAULT snowflake_nextval(), region int NOT NULL,
                     PRIMARY KEY (id, region)) PARTITION BY LIST (region);
CREATE TABLE events_1 PARTITION OF events FOR VALUES IN (1);
CREATE TABLE events_2 PARTITION OF events FOR VALUES IN (2);
SELECT snowflake_track_changes('events', 'changed_at');
INSERT INTO events (region) VALUES (1), (2);
DELETE FROM events WHERE region = 2;
SELECT kind, (data).region FROM snowflake_changes(NULL::events, 0, 100)
WHERE kind <> 'next' ORDER BY version;
CREATE TABLE events_3 PARTITION OF events FOR VALUES IN (3);
INSERT INTO events (region) VALUES (3);
SELECT count(*) AS stamped_in_a_new_partition FROM events WHERE region = 3 AND changed_at IS NOT NULL;

-- Rows that leave by TRUNCATE, DETACH or DROP of a partition reach readers as deletes, under the
-- tracked table; rows that enter by ATTACH as rows with new versions.
CREATE TABLE events_4 PARTITION OF events FOR VALUES IN (4);
CREATE TABLE events_5 PARTITION OF events FOR VALUES IN (5);
CREATE TABLE events_6 (LIKE events INCLUDING DEFAULTS);
INSERT INTO events (region) VALUES (1), (3), (3), (4), (5);
INSERT INTO events_6 (region, changed_at) VALUES (6, 1), (6, 2);
SELECT version AS before_moves FROM snowflake_changes(NULL::events, 0, 100) WHERE kind = 'next' \gset
TRUNCATE events_3;
ALTER TABLE events DETACH PARTITION events_4;
DROP TABLE events_5;
ALTER TABLE events ATTACH PARTITION events_6 FOR VALUES IN (6);
SELECT kind, (data).region, count(*) FROM snowflake_changes(NULL::events, :before_moves, 100)
WHERE kind <> 'next' GROUP BY kind, (data).region ORDER BY min(version);
SELECT count(*) AS tombstones_of_partitions FROM snowflake_catalog.snowflake_tombstones
WHERE tracked <> 'events'::regclass AND tracked::text LIKE 'events%';
SELECT count(*) AS attached_rows_stamped FROM events_6 WHERE changed_at > :before_moves;
-- A truncation of the whole tree, reached through CASCADE, is the root's one event; a
-- partition reached through CASCADE keeps its rows' tombstones.
CREATE TABLE regions (region int PRIMARY KEY);
INSERT INTO regions VALUES (1), (3);
ALTER TABLE events_1 ADD FOREIGN KEY (region) REFERENCES regions;
SELECT version AS before_cascade FROM snowflake_changes(NULL::events, 0, 100) WHERE kind = 'next' \gset
TRUNCATE regions CASCADE;
SELECT kind, (data).region, count(*) FROM snowflake_changes(NULL::events, :before_cascade, 100)
WHERE kind <> 'next' GROUP BY kind, (data).region ORDER BY min(version);
DROP TABLE regions CASCADE;
DROP TABLE events_4;
-- A tracked table never becomes a partition, and no partition of one is detached concurrently.
CREATE TABLE events_7 (LIKE events INCLUDING DEFAULTS, PRIMARY KEY (id, region));
SELECT snowflake_track_changes('events_7', 'changed_at');
SELECT pg_temp.error_of($$ALTER TABLE events ATTACH PARTITION events_7 FOR VALUES IN (7)$$);
SELECT pg_temp.error_of($$ALTER TABLE events DETACH PARTITION events_6 CONCURRENTLY$$);
-- A dropped tracked table leaves neither its tracking nor its tombstones.
DELETE FROM events_7;
INSERT INTO events_7 (region) VALUES (7);
DELETE FROM events_7;
DROP TABLE events_7;
SELECT count(*) AS tracking_of_dropped FROM snowflake_catalog.snowflake_tracked_tables WHERE tracked::text ~ '^[0-9]+$';
SELECT count(*) AS tombstones_of_dropped FROM snowflake_catalog.snowflake_tombstones WHERE tracked::text ~ '^[0-9]+$';

-- A reader under the table's row-level security is refused: a tombstone's key cannot be judged
-- by a policy.
CREATE ROLE following_reader;
GRANT USAGE ON SCHEMA following TO following_reader;
GRANT SELECT ON orders TO following_reader;
ALTER TABLE orders ENABLE ROW LEVEL SECURITY;
CREATE POLICY nothing ON orders FOR SELECT USING (false);
SET ROLE following_reader;
SELECT pg_temp.error_of($$SELECT * FROM snowflake_changes(NULL::orders, 0, 10)$$);
RESET ROLE;
-- So is a reader with SELECT on the columns alone, whom the tombstones' policy does not show them.
REVOKE SELECT ON orders FROM following_reader;
GRANT SELECT (id, note, version) ON orders TO following_reader;
SET ROLE following_reader;
SELECT pg_temp.error_of($$SELECT * FROM snowflake_changes(NULL::orders, 0, 10)$$);
RESET ROLE;
DROP POLICY nothing ON orders;
ALTER TABLE orders DISABLE ROW LEVEL SECURITY;
REVOKE ALL ON orders FROM following_reader;
REVOKE ALL ON SCHEMA following FROM following_reader;
DROP ROLE following_reader;

-- What tracking refuses: a table whose rows could go or be read without a version or a
-- tombstone, a generated version column, a key that tombstones cannot keep exactly.
CREATE UNLOGGED TABLE refused_unlogged (id bigint PRIMARY KEY);
SELECT pg_temp.error_of($$SELECT snowflake_track_changes('refused_unlogged')$$);
CREATE TABLE refused_parent (id bigint PRIMARY KEY);
CREATE TABLE refused_child () INHERITS (refused_parent);
SELECT pg_temp.error_of($$SELECT snowflake_track_changes('refused_parent')$$);
CREATE TABLE refused_generated (id bigint PRIMARY KEY, version bigint GENERATED ALWAYS AS (id) STORED);
SELECT pg_temp.error_of($$SELECT snowflake_track_changes('refused_generated')$$);
CREATE TABLE refused_float (id float8 PRIMARY KEY);
SELECT pg_temp.error_of($$SELECT snowflake_track_changes('refused_float')$$);
CREATE FOREIGN DATA WRAPPER following_wrapper;
CREATE SERVER following_server FOREIGN DATA WRAPPER following_wrapper;
CREATE TABLE refused_tree (id bigint NOT NULL) PARTITION BY RANGE (id);
CREATE FOREIGN TABLE refused_remote PARTITION OF refused_tree FOR VALUES FROM (0) TO (10)
    SERVER following_server;
ALTER TABLE ONLY refused_tree ADD PRIMARY KEY (id);
SELECT pg_temp.error_of($$SELECT snowflake_track_changes('refused_tree')$$);
DROP TABLE refused_tree;
CREATE TABLE tracked_tree (id bigint PRIMARY KEY) PARTITION BY RANGE (id);
SELECT snowflake_track_changes('tracked_tree');
SELECT pg_temp.error_of($$CREATE FOREIGN TABLE tracked_remote PARTITION OF tracked_tree
    FOR VALUES FROM (0) TO (10) SERVER following_server$$);
CREATE FOREIGN TABLE tracked_remote (id bigint NOT NULL, version bigint) SERVER following_server;
SELECT pg_temp.error_of($$ALTER TABLE tracked_tree ATTACH PARTITION tracked_remote
    FOR VALUES FROM (0) TO (10)$$);
-- A foreign inheritance child, and a partitioned table whose own partition is foreign or
-- unlogged, are refused as well; so is tracking a tree with an unlogged partition.
SELECT pg_temp.error_of($$CREATE FOREIGN TABLE tracked_heir () INHERITS (tracked_tree)
    SERVER following_server$$) AS foreign_child;
CREATE TABLE tracked_middle (id bigint NOT NULL, version bigint) PARTITION BY RANGE (id);
CREATE UNLOGGED TABLE tracked_leaf PARTITION OF tracked_middle FOR VALUES FROM (20) TO (30);
SELECT pg_temp.error_of($$ALTER TABLE tracked_tree ATTACH PARTITION tracked_middle
    FOR VALUES FROM (20) TO (40)$$) AS unlogged_below;
DROP TABLE tracked_middle;
CREATE TABLE refused_tree (id bigint PRIMARY KEY) PARTITION BY RANGE (id);
CREATE UNLOGGED TABLE refused_leaf PARTITION OF refused_tree FOR VALUES FROM (0) TO (10);
SELECT pg_temp.error_of($$SELECT snowflake_track_changes('refused_tree')$$) AS unlogged_leaf;
DROP TABLE refused_tree;
DROP TABLE tracked_tree;
DROP FOREIGN TABLE tracked_remote;
DROP SERVER following_server;
DROP FOREIGN DATA WRAPPER following_wrapper;
DROP TABLE refused_unlogged, refused_parent, refused_child, refused_generated, refused_float;
-- A change of a column that the primary key only includes is no change of the key.
CREATE TABLE included (id bigint, note text NOT NULL, PRIMARY KEY (id) INCLUDE (note));
SELECT snowflake_track_changes('included');
SELECT key_columns FROM snowflake_catalog.snowflake_tracked_tables WHERE tracked = 'included'::regclass;
INSERT INTO included VALUES (1, 'x');
UPDATE included SET note = 'y';
SELECT kind, (data).note FROM snowflake_changes(NULL::included, 0, 10) ORDER BY version;
-- Dropping a column the key includes drops the key, and is refused.
SELECT pg_temp.error_of('ALTER TABLE included DROP COLUMN note') AS drop_included;
DROP TABLE included;
-- A delete reads back as the key and NULL elsewhere, without the checks of a domain on another
-- column; a column named like the query's alias does not hide the row.
CREATE DOMAIN filled_text AS text NOT NULL;
CREATE TABLE domained (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), note filled_text, t int);
SELECT snowflake_track_changes('domained');
INSERT INTO domained (note, t) VALUES ('kept', 1), ('deleted', 2);
DELETE FROM domained WHERE note = 'deleted';
SELECT kind, (data).note, (data).t FROM snowflake_changes(NULL::domained, 0, 10) ORDER BY version;
-- Tracking again after a stop refuses the cursors of the first tracking, whose gap no tombstone
-- covers; so does a cursor above the bound, which no call on this server returned.
SELECT version AS first_cursor FROM snowflake_changes(NULL::domained, 0, 10) WHERE kind = 'next' \gset
SELECT snowflake_untrack_changes('domained');
DELETE FROM domained;
SELECT snowflake_track_changes('domained');
SELECT regexp_replace(pg_temp.error_of(format('SELECT * FROM snowflake_changes(NULL::domained, %s, 10)', :first_cursor)),
                      '[0-9]{10,}', 'N', 'g') AS cursor_of_an_earlier_tracking;
SELECT count(*) AS empty_table_follows_from_0 FROM snowflake_changes(NULL::domained, 0, 10);
SELECT regexp_replace(pg_temp.error_of($$SELECT * FROM snowflake_changes(NULL::domained, 9000000000000000000, 10)$$),
                      '[0-9]{10,}', 'N', 'g') AS cursor_above_the_bound;
SELECT snowflake_untrack_changes('domained');
DROP TABLE domained;
DROP DOMAIN filled_text;

-- A setup row written by hand names a key of the owner's choosing; the rows of a partition that
-- leaves are kept by the table's real primary key, and none of the owner's code runs as the
-- extension's owner.
CREATE ROLE following_owner;
GRANT USAGE, CREATE ON SCHEMA following TO following_owner;
SET ROLE following_owner;
CREATE TYPE following.mood AS ENUM ('calm');
CREATE FUNCTION following.mood_json(following.mood) RETURNS json LANGUAGE plpgsql AS
    $$BEGIN RAISE WARNING 'the owner''s cast ran as %', current_user; RETURN to_json($1::text); END$$;
CREATE CAST (following.mood AS json) WITH FUNCTION following.mood_json(following.mood);
CREATE TABLE forged (id bigint PRIMARY KEY, k following.mood DEFAULT 'calm') PARTITION BY RANGE (id);
CREATE TABLE forged_1 PARTITION OF forged FOR VALUES FROM (0) TO (100);
INSERT INTO forged (id) VALUES (1), (2);
INSERT INTO snowflake_catalog.snowflake_tracked_tables (tracked, version_column, key_columns)
    VALUES ('forged', 'version', '{k}');
DROP TABLE forged_1;
RESET ROLE;
SELECT key FROM snowflake_catalog.snowflake_tombstones WHERE tracked = 'forged'::regclass ORDER BY version;
DROP TABLE forged;
DROP CAST (following.mood AS json);
DROP OWNED BY following_owner;
DROP ROLE following_owner;

-- Trimming: tombstones older than keep_tombstones go, never at or above the bound, and a cursor
-- below what was trimmed is refused.
SELECT version AS before_trim FROM snowflake_changes(NULL::orders, :start, 1000) WHERE kind = 'next' \gset
SELECT snowflake_trim_tombstones('orders') AS trimmed_while_young;
UPDATE snowflake_catalog.snowflake_tracked_tables SET keep_tombstones = '1 microsecond' WHERE tracked = 'orders'::regclass;
SELECT snowflake_trim_tombstones('orders') > 0 AS trimmed_when_old;
SELECT trimmed_below >= :before_trim AND trimmed_below <= snowflake_settled_bound() AS trimmed_below_the_bound
FROM snowflake_catalog.snowflake_tracked_tables WHERE tracked = 'orders'::regclass;
SELECT regexp_replace(pg_temp.error_of(format('SELECT * FROM snowflake_changes(NULL::orders, %s, 10)', :start)),
                      '[0-9]{10,}', 'N', 'g') AS trimmed_cursor;
SELECT count(*) AS read_from_the_trim FROM snowflake_changes(NULL::orders,
    (SELECT trimmed_below FROM snowflake_catalog.snowflake_tracked_tables WHERE tracked = 'orders'::regclass), 10);

-- What tracking refuses, done once a table is tracked, is refused too: each would let rows go or
-- change without a version or a tombstone. Nothing changes.
SELECT pg_temp.error_of('ALTER TABLE orders SET UNLOGGED') AS set_unlogged;
SELECT pg_temp.error_of('ALTER TABLE orders DROP CONSTRAINT orders_pkey') AS drop_key;
SELECT pg_temp.error_of('ALTER TABLE orders DROP COLUMN id CASCADE') AS drop_key_column;
SELECT pg_temp.error_of('ALTER TABLE orders DROP COLUMN version') AS drop_version;
SELECT pg_temp.error_of('CREATE TABLE orders_child () INHERITS (orders)') AS inherits;
CREATE TABLE orders_adopted (LIKE orders);
SELECT pg_temp.error_of('ALTER TABLE orders_adopted INHERIT orders') AS inherit;
DROP TABLE orders_adopted;
SELECT pg_temp.error_of($$CREATE UNLOGGED TABLE events_9 PARTITION OF events FOR VALUES IN (9)$$)
    AS unlogged_partition;
CREATE UNLOGGED TABLE events_9 (LIKE events INCLUDING DEFAULTS, PRIMARY KEY (id, region));
SELECT pg_temp.error_of($$ALTER TABLE events ATTACH PARTITION events_9 FOR VALUES IN (9)$$)
    AS unlogged_attach;
DROP TABLE events_9;
SELECT pg_temp.error_of('ALTER TABLE events_1 SET UNLOGGED') AS unlogged_of_a_partition;
SELECT relpersistence, (SELECT count(*) FROM pg_inherits WHERE inhparent = 'orders'::regclass)
    AS children FROM pg_class WHERE oid = 'orders'::regclass;
-- Another column may go.
ALTER TABLE orders ADD COLUMN scratch int;
ALTER TABLE orders DROP COLUMN scratch;
-- The hint names the table as a literal that reads back, whatever its name.
CREATE TABLE "it's" (id bigint PRIMARY KEY DEFAULT snowflake_nextval());
SELECT snowflake_track_changes('"it''s"');
ALTER TABLE "it's" SET UNLOGGED;
SELECT snowflake_untrack_changes('following."it''s"');
DROP TABLE "it's";

-- Untracking removes the triggers and the tombstones; the column and its index stay.
SELECT snowflake_untrack_changes('events');
SELECT count(*) AS triggers_left FROM pg_trigger WHERE tgrelid = 'events'::regclass AND NOT tgisinternal;
SELECT count(*) AS tombstones_left FROM snowflake_catalog.snowflake_tombstones WHERE tracked::text LIKE 'events%';
SELECT count(*) AS column_kept FROM pg_attribute WHERE attrelid = 'events'::regclass AND attname = 'changed_at';

DROP TABLE events;
SELECT snowflake_untrack_changes('orders');
DROP TABLE orders;
RESET search_path;
DROP SCHEMA following;
