-- The settled bound: what holds it, where it refuses, and the reading pattern.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS snowflake;

-- Prepared transactions that draw ids, with no bound ever read: each PREPARE frees the entries
-- of ended ones (test/snowflake.conf allows 2 prepared transactions, so 4 entries), and leaves
-- no file of an ended one behind.
SELECT step
FROM generate_series(1, 6) AS cycle,
     LATERAL unnest(ARRAY['BEGIN', 'SELECT snowflake_nextval() IS NOT NULL AS drawn',
                          format('PREPARE TRANSACTION %L', 'cycle' || cycle),
                          format('COMMIT PREPARED %L', 'cycle' || cycle)]) AS step \gexec
SELECT count(*) <= 1 AS at_most_the_last_file FROM pg_ls_dir('snowflake_claims') AS f;
SELECT count(*) AS holders_after_the_cycles FROM snowflake_settled_holders
WHERE gid LIKE 'cycle%' OR pid IS NULL;

-- A transaction's ids hold the bound at or below the first of them until it ends.
BEGIN;
SELECT snowflake_nextval() AS first_id \gset
SELECT snowflake_nextval() > :first_id AS later_id;
SELECT snowflake_settled_bound() <= :first_id AS held_in_transaction;
SELECT count(*) = 1 AS one_claim, bool_and(lowest_id <= :first_id) AS lowest_at_or_below
FROM snowflake_settled_holders WHERE pid = pg_backend_pid();
COMMIT;
SELECT snowflake_settled_bound() > :first_id AS settled_after_commit;
SELECT count(*) AS holders_after_commit FROM snowflake_settled_holders
WHERE pid = pg_backend_pid();

-- An id drawn in a subtransaction that rolled back holds it until the top-level end.
BEGIN;
SAVEPOINT s;
SELECT snowflake_nextval() AS rolled_back_id \gset
ROLLBACK TO SAVEPOINT s;
SELECT snowflake_settled_bound() <= :rolled_back_id AS held_after_rollback_to_savepoint;
ROLLBACK;
SELECT snowflake_settled_bound() > :rolled_back_id AS settled_after_rollback;

-- A quiet server's bound moves with the clock: once the clock has left the millisecond of the
-- last bound, the next bound is past it, although no id was issued in between.
SELECT ids_generated AS issued_before FROM snowflake_info() \gset
SELECT set_config('settled_test.quiet_bound', snowflake_settled_bound()::text, false) AS quiet_bound
\gset
DO $wait$
BEGIN
    WHILE clock_timestamp() <= snowflake_timestamp(current_setting('settled_test.quiet_bound')::bigint)
                               + interval '2 ms' LOOP
        PERFORM pg_catalog.pg_sleep(0.001);
    END LOOP;
END
$wait$;
SELECT snowflake_settled_bound() > :quiet_bound + (1::bigint << 22) AS moved_with_clock;
SELECT snowflake_timestamp(snowflake_settled_bound()) > clock_timestamp() - interval '1 s'
    AS near_the_clock;
SELECT ids_generated = :issued_before AS bound_calls_issue_no_id FROM snowflake_info();

-- A snapshot taken before the bound would miss rows committed below it after: refused.
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT snowflake_settled_bound();
ROLLBACK;
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT bound FROM snowflake_settled_bound_lsn();
ROLLBACK;

-- The bound with the WAL position after it.
SELECT bound > 0 AS has_bound, lsn <= pg_current_wal_insert_lsn() AS lsn_before_now
FROM snowflake_settled_bound_lsn();

-- snowflake_info() shows the bound and its age, zero while nothing holds it.
SELECT settled_bound > :first_id AS info_bound, settled_bound_age = interval '0' AS info_age
FROM snowflake_info();

-- The reading pattern in one statement: pages in id order, below the bound, from a cursor.
CREATE TABLE settled_outbox (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), n int);
INSERT INTO settled_outbox (n) SELECT g FROM generate_series(1, 5) AS g;
SELECT n FROM snowflake_settled_rows(NULL::settled_outbox, 0, 3);
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT count(*) FROM snowflake_settled_rows(NULL::settled_outbox, 0, 10);
ROLLBACK;
SELECT max(id) + 1 AS cursor FROM snowflake_settled_rows(NULL::settled_outbox, 0, 3) \gset
SELECT n FROM snowflake_settled_rows(NULL::settled_outbox, :cursor, 3);
-- Another key column, and rows of an open transaction of this session are not returned.
CREATE TABLE settled_other (n int, event_id bigint UNIQUE DEFAULT snowflake_nextval());
INSERT INTO settled_other (n) VALUES (1), (2);
BEGIN;
INSERT INTO settled_other (n) VALUES (3);
SELECT n FROM snowflake_settled_rows(NULL::settled_other, 0, 10, 'event_id');
COMMIT;
SELECT n FROM snowflake_settled_rows(NULL::settled_other, 0, 10, 'event_id');
-- Bad arguments.
SELECT * FROM snowflake_settled_rows(NULL::integer, 0, 10);
SELECT * FROM snowflake_settled_rows(NULL::settled_outbox, NULL, 10);
SELECT * FROM snowflake_settled_rows(NULL::settled_outbox, 0, 10, 'no_such_column');
SELECT * FROM snowflake_settled_rows(NULL::settled_other, 0, 10, 'n; DROP TABLE settled_outbox');
SELECT * FROM snowflake_settled_rows(NULL::settled_other, 0, 10, 'n');
SELECT * FROM snowflake_settled_rows(NULL::settled_outbox, 0, -1);
-- A key that rows may share would lose rows between two pages: refused (1.11).
CREATE TABLE settled_shared_key (event_id bigint, n int);
CREATE INDEX ON settled_shared_key (event_id);
SELECT * FROM snowflake_settled_rows(NULL::settled_shared_key, 0, 10, 'event_id');
DROP TABLE settled_shared_key;
CREATE TYPE settled_pair AS (id bigint, n int);
SELECT * FROM snowflake_settled_rows(NULL::settled_pair, 0, 10);
DROP TYPE settled_pair;
SELECT count(*) AS outbox_still_there FROM settled_outbox;
DROP TABLE settled_outbox, settled_other;
