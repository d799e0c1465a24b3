-- Publications (version 1.10): however a publication covers the extension's configuration table,
-- no statement of a user and no call of the extension fails because of it. Before 1.10 the
-- event trigger's DELETE failed every DROP in a database with a FOR ALL TABLES publication.
CREATE EXTENSION IF NOT EXISTS snowflake;
CREATE SCHEMA publications;
SET search_path = publications, public;
-- CREATE PUBLICATION and CREATE SUBSCRIPTION warn of wal_level and of the connection, in words
-- that differ between versions.
SET client_min_messages = error;

-- Statements of every kind that drop something, and every call that writes the configuration
-- table: a setup, a change of it, maintenance, the scheduled run and a DROP of a set-up table.
CREATE PROCEDURE pg_temp.drop_everything() LANGUAGE plpgsql AS $$
BEGIN
    CREATE TABLE plain (a int PRIMARY KEY, b int);
    ALTER TABLE plain DROP COLUMN b;
    CREATE INDEX plain_a ON plain (a);
    DROP INDEX plain_a;
    CREATE VIEW plain_view AS SELECT a FROM plain;
    DROP VIEW plain_view;
    CREATE FUNCTION plain_function() RETURNS int LANGUAGE sql AS 'SELECT 1';
    DROP FUNCTION plain_function();
    DROP TABLE plain;
    CREATE SCHEMA dropped;
    CREATE TABLE dropped.t (a int);
    DROP SCHEMA dropped CASCADE;
    CREATE PUBLICATION another FOR ALL TABLES;
    DROP PUBLICATION another;
    CREATE SUBSCRIPTION unconnected CONNECTION 'host=/nonexistent dbname=none'
        PUBLICATION none WITH (connect = false);
    ALTER SUBSCRIPTION unconnected SET (slot_name = NONE);
    DROP SUBSCRIPTION unconnected;
    CREATE TABLE events (id bigint PRIMARY KEY DEFAULT snowflake_nextval())
        PARTITION BY RANGE (id);
    PERFORM snowflake_partition_table('events', '1 day', ahead => 1);
    PERFORM snowflake_partition_table('events', '1 day', ahead => 2);
    PERFORM snowflake_maintain_partitions('events');
    PERFORM snowflake_maintain_partitions();
    CALL snowflake_run_partition_maintenance();
    ASSERT (SELECT ahead FROM snowflake_catalog.snowflake_partitioned_tables
            WHERE parent::regclass = 'events'::regclass) = 2;
    DROP TABLE events;
    ASSERT NOT EXISTS (SELECT FROM snowflake_catalog.snowflake_partitioned_tables);
END
$$;

-- Every kind of publication that covers the configuration table, then ones of users' tables
-- with row filters and column lists.
CREATE PUBLICATION covering FOR ALL TABLES;
CALL pg_temp.drop_everything();
DROP PUBLICATION covering;
CREATE PUBLICATION covering FOR ALL TABLES WITH (publish = 'delete');
CALL pg_temp.drop_everything();
DROP PUBLICATION covering;
CREATE PUBLICATION covering FOR ALL TABLES
    WITH (publish = 'update, delete, truncate', publish_via_partition_root = true);
CALL pg_temp.drop_everything();
DROP PUBLICATION covering;
CREATE PUBLICATION covering FOR TABLES IN SCHEMA snowflake_catalog;
CALL pg_temp.drop_everything();
DROP PUBLICATION covering;
CREATE PUBLICATION covering FOR TABLE snowflake_catalog.snowflake_partitioned_tables;
CALL pg_temp.drop_everything();
DROP PUBLICATION covering;
CREATE PUBLICATION covering FOR TABLE snowflake_catalog.snowflake_partitioned_tables WHERE (ahead > 1);
CALL pg_temp.drop_everything();
DROP PUBLICATION covering;
-- A column list that leaves out columns of the replica identity: PostgreSQL refuses any UPDATE
-- or DELETE of the table through the executor, which the extension therefore does not use.
CREATE PUBLICATION covering FOR TABLE snowflake_catalog.snowflake_partitioned_tables (parent, every);
CALL pg_temp.drop_everything();
DROP PUBLICATION covering;
CREATE TABLE filtered (a int PRIMARY KEY, b int);
CREATE PUBLICATION covering FOR TABLE filtered WHERE (a > 0), snowflake_catalog.snowflake_partitioned_tables (every);
CALL pg_temp.drop_everything();
DROP PUBLICATION covering;
CREATE PUBLICATION covering FOR TABLE filtered (a);
CALL pg_temp.drop_everything();
DROP PUBLICATION covering;
DROP TABLE filtered;
RESET client_min_messages;

-- The replica identity of the configuration table is every column: a subscriber that receives
-- its rows, and a change data capture tool, see the whole row of each change.
SELECT relreplident FROM pg_class WHERE oid = 'snowflake_catalog.snowflake_partitioned_tables'::regclass;
-- The trigger that keeps a subscriber's setups its own fires only in logical replication's
-- workers, and is the configuration table's alone.
SELECT tgname, tgenabled FROM pg_trigger
WHERE tgrelid = 'snowflake_catalog.snowflake_partitioned_tables'::regclass ORDER BY tgname;
CREATE TABLE other (a int);
CREATE TRIGGER misplaced BEFORE INSERT ON other
    FOR EACH ROW EXECUTE FUNCTION snowflake_keep_setups_local();
INSERT INTO other VALUES (1);
DROP TABLE other;
-- In this session, which is no worker of logical replication, a row written in replica mode is
-- written (the superuser asked for it).
CREATE TABLE events (id bigint PRIMARY KEY DEFAULT snowflake_nextval()) PARTITION BY RANGE (id);
SET session_replication_role = replica;
INSERT INTO snowflake_catalog.snowflake_partitioned_tables (parent, every, ahead, time_zone)
VALUES ('events', '1 day', 1, 'UTC');
RESET session_replication_role;
SELECT parent, every, ahead FROM snowflake_catalog.snowflake_partitioned_tables;
DROP TABLE events;
SELECT count(*) AS rows_left FROM snowflake_catalog.snowflake_partitioned_tables;

-- A read-only transaction and a read-only session: every call that writes refuses before it does
-- anything, naming the way out.
CREATE TABLE events (id bigint PRIMARY KEY DEFAULT snowflake_nextval()) PARTITION BY RANGE (id);
BEGIN READ ONLY;
SELECT * FROM snowflake_partition_table('events', '1 day');
ROLLBACK;
BEGIN READ ONLY;
SELECT * FROM snowflake_maintain_partitions();
ROLLBACK;
SET default_transaction_read_only = on;
CALL snowflake_run_partition_maintenance();
RESET default_transaction_read_only;
SELECT count(*) AS partitions FROM pg_inherits WHERE inhparent = 'events'::regclass;
DROP TABLE events;

RESET search_path;
DROP SCHEMA publications;

-- An update under a publication of every table: from 1.7, whose update to 1.8 removes the rows
-- of tables dropped before (there was no event trigger), and from 1.9. In a database of its own,
-- as sql/install.sql.
CREATE DATABASE snowflake_publications;
\c snowflake_publications
SET client_min_messages = error;
CREATE EXTENSION snowflake VERSION '1.7';
CREATE TABLE events (id bigint PRIMARY KEY DEFAULT snowflake_nextval()) PARTITION BY RANGE (id);
SELECT count(*) > 0 AS set_up FROM snowflake_partition_table('events', '1 day', ahead => 1);
DROP TABLE events;
CREATE PUBLICATION everything FOR ALL TABLES;
ALTER EXTENSION snowflake UPDATE;
SELECT e.extversion = a.default_version AS at_default_version
FROM pg_extension AS e JOIN pg_available_extensions AS a ON a.name = e.extname
WHERE e.extname = 'snowflake';
SELECT count(*) AS rows_left FROM snowflake_catalog.snowflake_partitioned_tables;
CREATE TABLE dropped (a int);
DROP TABLE dropped;
DROP EXTENSION snowflake;
CREATE EXTENSION snowflake VERSION '1.9';
ALTER EXTENSION snowflake UPDATE;
CREATE TABLE events (id bigint PRIMARY KEY DEFAULT snowflake_nextval()) PARTITION BY RANGE (id);
SELECT count(*) > 0 AS set_up FROM snowflake_partition_table('events', '1 day', ahead => 1);
DROP TABLE events;
SELECT count(*) AS rows_left FROM snowflake_catalog.snowflake_partitioned_tables;
\c contrib_regression
DROP DATABASE snowflake_publications;
