-- Every error of the SQL interface, with its SQLSTATE, and that a failed call changes nothing.
CREATE EXTENSION IF NOT EXISTS snowflake;
SET timezone = 'UTC';

-- Runs a statement and reports its SQLSTATE, message and detail instead of failing.
CREATE FUNCTION pg_temp.error_of(statement text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    detail text;
BEGIN
    EXECUTE statement;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS detail = PG_EXCEPTION_DETAIL;
    RETURN SQLSTATE || ': ' || SQLERRM || CASE WHEN detail <> '' THEN ' / ' || detail ELSE '' END;
END;
$$;

-- A negative bigint is not a Snowflake id.
SELECT pg_temp.error_of('SELECT snowflake_decode(-1)');
SELECT pg_temp.error_of('SELECT snowflake_timestamp(-9223372036854775808)');
SELECT pg_temp.error_of('SELECT snowflake_unix_ms(-1)');
SELECT pg_temp.error_of('SELECT snowflake_datacenter_id(-1)');
SELECT pg_temp.error_of('SELECT snowflake_machine_id(-1)');
SELECT pg_temp.error_of('SELECT snowflake_sequence(-1)');

-- Every field of snowflake_encode(bigint, ...) just outside its range.
SELECT pg_temp.error_of('SELECT snowflake_encode(1288834974656, 0, 0, 0)');
SELECT pg_temp.error_of('SELECT snowflake_encode(3487858230209, 0, 0, 0)');
SELECT pg_temp.error_of('SELECT snowflake_encode(-9223372036854775808, 0, 0, 0)');
SELECT pg_temp.error_of('SELECT snowflake_encode(1700000000000, -1, 0, 0)');
SELECT pg_temp.error_of('SELECT snowflake_encode(1700000000000, 32, 0, 0)');
SELECT pg_temp.error_of('SELECT snowflake_encode(1700000000000, 0, -1, 0)');
SELECT pg_temp.error_of('SELECT snowflake_encode(1700000000000, 0, 32, 0)');
SELECT pg_temp.error_of('SELECT snowflake_encode(1700000000000, 0, 0, -1)');
SELECT pg_temp.error_of('SELECT snowflake_encode(1700000000000, 0, 0, 4096)');

-- The timestamptz form names the instant and its range.
SELECT pg_temp.error_of($$SELECT snowflake_encode('2010-11-04 01:42:54.656999+00'::timestamptz, 0, 0, 0)$$);
SELECT pg_temp.error_of($$SELECT snowflake_encode('2080-07-10 17:30:30.209+00'::timestamptz, 0, 0, 0)$$);
SELECT pg_temp.error_of($$SELECT snowflake_encode('infinity'::timestamptz, 0, 0, 0)$$);
SELECT pg_temp.error_of($$SELECT snowflake_encode('-infinity'::timestamptz, 0, 0, 0)$$);
SELECT pg_temp.error_of($$SELECT snowflake_encode('2023-11-14 22:13:20+00'::timestamptz, 32, 0, 0)$$);
SELECT pg_temp.error_of($$SELECT snowflake_encode('2023-11-14 22:13:20+00'::timestamptz, 0, 0, 4096)$$);

-- The message as a user sees it.
SELECT snowflake_decode(-42);
SELECT snowflake_encode(1700000000000, 7, 13, 5000);

-- Node ids belong to the server: a session cannot pick its own.
SELECT pg_temp.error_of('SET snowflake.datacenter_id = 1');
SELECT pg_temp.error_of('SET snowflake.machine_id = 1');
SELECT pg_temp.error_of('SET snowflake.max_clock_rollback_wait = 10');
SELECT pg_temp.error_of('SET snowflake.key_floor_max_lead = ''1s''');
SELECT pg_temp.error_of('SET snowflake.no_such_setting = 1');
SHOW snowflake.datacenter_id;
SHOW snowflake.machine_id;
SHOW snowflake.max_clock_rollback_wait;

-- A failed statement leaves no half-done rows behind.
CREATE TABLE keyed (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), dc integer);
SELECT pg_temp.error_of($$INSERT INTO keyed (dc) VALUES (1), (2), (snowflake_encode(1700000000000, 40, 0, 0)::integer)$$);
SELECT count(*) AS rows_after_failed_insert FROM keyed;
DROP TABLE keyed;

-- snowflake_release_key() releases only the key beyond snowflake.key_floor_max_lead that stops
-- generation: with none, every key is refused, a negative one too; a plain role may not call it.
SELECT pg_temp.error_of('SELECT snowflake_release_key(2128003765377310720)');
SELECT pg_temp.error_of('SELECT snowflake_release_key(-1)');
SELECT snowflake_release_key(NULL) IS NULL AS null_releases_nothing;
CREATE ROLE snowflake_errors_plain;
SET ROLE snowflake_errors_plain;
SELECT pg_temp.error_of('SELECT snowflake_release_key(1)');
RESET ROLE;
DROP ROLE snowflake_errors_plain;

-- Following changes (1.12): what cannot be tracked or read, each refused before anything is done.
CREATE TABLE no_key (id bigint, note text);
CREATE TYPE key_kind AS ENUM ('a', 'b');
CREATE TABLE typed_key (id key_kind PRIMARY KEY);
CREATE TABLE text_version (id bigint PRIMARY KEY, version text);
CREATE TABLE followed (id bigint PRIMARY KEY, note text);
CREATE VIEW a_view AS SELECT 1 AS id;
SELECT pg_temp.error_of($$SELECT snowflake_track_changes('no_key')$$);
SELECT pg_temp.error_of($$SELECT snowflake_track_changes('typed_key')$$);
SELECT pg_temp.error_of($$SELECT snowflake_track_changes('text_version')$$);
SELECT pg_temp.error_of($$SELECT snowflake_track_changes('followed', 'id')$$);
SELECT pg_temp.error_of($$SELECT snowflake_track_changes('a_view')$$);
SELECT pg_temp.error_of($$SELECT snowflake_track_changes(NULL)$$);
SELECT count(*) AS columns_added_by_refusals FROM pg_attribute
WHERE attrelid IN ('no_key'::regclass, 'typed_key'::regclass, 'followed'::regclass)
  AND attname = 'version';
SELECT pg_temp.error_of($$SELECT * FROM snowflake_changes(NULL::followed, 0, 10)$$);
SELECT pg_temp.error_of($$SELECT snowflake_untrack_changes('followed')$$);
SELECT snowflake_track_changes('followed');
SELECT pg_temp.error_of($$SELECT snowflake_track_changes('followed')$$);
SELECT pg_temp.error_of($$SELECT * FROM snowflake_changes(NULL::followed, 0, 0)$$);
SELECT pg_temp.error_of($$SELECT * FROM snowflake_changes(NULL::followed, NULL, 10)$$);
SELECT pg_temp.error_of($$SELECT * FROM snowflake_changes(NULL::a_view, 0, 10)$$);
SELECT pg_temp.error_of($$SELECT snowflake_forget_tombstones('followed')$$);
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT pg_temp.error_of($$SELECT * FROM snowflake_changes(NULL::followed, 0, 10)$$);
COMMIT;
SELECT pg_temp.error_of($$SELECT snowflake_stamp_version()$$);
CREATE TRIGGER wrong AFTER INSERT ON no_key FOR EACH ROW EXECUTE FUNCTION snowflake_stamp_version('id');
SELECT pg_temp.error_of($$INSERT INTO no_key VALUES (1, 'x')$$);
DROP TRIGGER wrong ON no_key;
-- A tombstone trigger made by hand on a key of a role's own type is refused before any output
-- function of that type runs as the extension's owner.
CREATE TRIGGER by_hand AFTER DELETE ON typed_key FOR EACH ROW EXECUTE FUNCTION snowflake_keep_tombstone('id');
INSERT INTO typed_key VALUES ('a');
SELECT pg_temp.error_of($$DELETE FROM typed_key$$);
SELECT count(*) AS tombstones_by_hand FROM snowflake_catalog.snowflake_tombstones WHERE tracked = 'typed_key'::regclass;
DROP TRIGGER by_hand ON typed_key;
ALTER TABLE followed ALTER version TYPE text;
SELECT pg_temp.error_of($$INSERT INTO followed (id) VALUES (1)$$);
ALTER TABLE followed ALTER version TYPE bigint USING version::bigint;
SELECT snowflake_untrack_changes('followed');
DROP VIEW a_view;
DROP TABLE no_key, typed_key, text_version, followed;
DROP TYPE key_kind;
