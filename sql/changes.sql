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
SELECT tracked, version_column, key_columns, trimmed_below FROM snowflake_tracked_tables;
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

-- From cursor 0: the latest state of each changed row, in version order, then the cursor. The row
-- from before tracking has no version: a reader copies the table first.
SELECT kind, (data).note FROM snowflake_changes(NULL::orders, 0, 100) ORDER BY version;

-- A delete leaves the key; a changed key reaches the reader as a delete of the old one and the
-- row under the new one; a truncation that rolls back leaves nothing.
SELECT id AS old_key FROM orders WHERE note = 'two' \gset
UPDATE orders SET id = id + 1 WHERE note = 'two';
DELETE FROM orders WHERE note = 'three';
BEGIN;
TRUNCATE orders;
ROLLBACK;
SELECT kind, (data).id = :old_key AS is_old_key, (data).note
FROM snowflake_changes(NULL::orders, 0, 100) WHERE kind <> 'next' ORDER BY version;

-- A key deleted and inserted again reads as the row, not as a delete.
DELETE FROM orders WHERE id = 1;
INSERT INTO orders (id, note) VALUES (1, 'again');
SELECT kind, (data).note FROM snowflake_changes(NULL::orders, 0, 100)
WHERE kind <> 'next' AND (data).id = 1;

-- Pages: a full page's cursor is its last version plus one, and the pages together are the
-- whole list; a page that is not full ends at the bound.
CREATE TEMP TABLE whole AS SELECT version, kind FROM snowflake_changes(NULL::orders, 0, 100);
CREATE TEMP TABLE paged (version bigint, kind text);
DO $$
DECLARE
    cursor_at bigint := 0;
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
FROM snowflake_changes(NULL::orders, 0, 1000) WHERE kind = 'next';

-- A truncation is one event; rows after it come after it.
TRUNCATE orders;
INSERT INTO orders (note) VALUES ('after truncation');
SELECT kind, (data).note FROM snowflake_changes(NULL::orders, 0, 100)
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
SELECT count(*) AS tombstones_of_partitions FROM snowflake_tombstones
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
SELECT count(*) AS tracking_of_dropped FROM snowflake_tracked_tables WHERE tracked::text ~ '^[0-9]+$';
SELECT count(*) AS tombstones_of_dropped FROM snowflake_tombstones WHERE tracked::text ~ '^[0-9]+$';

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
DROP POLICY nothing ON orders;
ALTER TABLE orders DISABLE ROW LEVEL SECURITY;
REVOKE ALL ON orders FROM following_reader;
REVOKE ALL ON SCHEMA following FROM following_reader;
DROP ROLE following_reader;

-- Trimming: tombstones older than keep_tombstones go, never at or above the bound, and a cursor
-- below what was trimmed is refused.
SELECT version AS before_trim FROM snowflake_changes(NULL::orders, 0, 1000) WHERE kind = 'next' \gset
SELECT snowflake_trim_tombstones('orders') AS trimmed_while_young;
UPDATE snowflake_tracked_tables SET keep_tombstones = '1 microsecond' WHERE tracked = 'orders'::regclass;
SELECT snowflake_trim_tombstones('orders') > 0 AS trimmed_when_old;
SELECT trimmed_below >= :before_trim AND trimmed_below <= snowflake_settled_bound() AS trimmed_below_the_bound
FROM snowflake_tracked_tables WHERE tracked = 'orders'::regclass;
SELECT regexp_replace(pg_temp.error_of($$SELECT * FROM snowflake_changes(NULL::orders, 0, 10)$$),
                      '[0-9]{10,}', 'N') AS trimmed_cursor;
SELECT count(*) AS read_from_the_trim FROM snowflake_changes(NULL::orders,
    (SELECT trimmed_below FROM snowflake_tracked_tables WHERE tracked = 'orders'::regclass), 10);

-- Untracking removes the triggers and the tombstones; the column and its index stay.
SELECT snowflake_untrack_changes('events');
SELECT count(*) AS triggers_left FROM pg_trigger WHERE tgrelid = 'events'::regclass AND NOT tgisinternal;
SELECT count(*) AS tombstones_left FROM snowflake_tombstones WHERE tracked::text LIKE 'events%';
SELECT count(*) AS column_kept FROM pg_attribute WHERE attrelid = 'events'::regclass AND attname = 'changed_at';

DROP TABLE events;
SELECT snowflake_untrack_changes('orders');
DROP TABLE orders;
RESET search_path;
DROP SCHEMA following;
