-- The snowflake extension, from 1.11 to 1.12: following every change of a table. A tracked
-- table's inserts and updates take a version from the generator, its deletes, key changes and
-- truncations leave tombstones, and snowflake_changes() reads them below the settled bound. The
-- extension's tables move to a schema of their own, snowflake_catalog.
\echo Use "ALTER EXTENSION snowflake UPDATE TO '1.12'" to load this file. \quit

-- The extension's tables live in a schema of their own from 1.12, so that an application's
-- schema tools (Alembic, a Rails schema.rb, a truncation of every table) never take them for the
-- application's. Its name is fixed: the scripts and the library name the tables with it, and the
-- extension is no longer relocatable. No IF NOT EXISTS: a schema of that name that the
-- extension did not make could be another role's, and the update fails instead.
CREATE SCHEMA snowflake_catalog;
COMMENT ON SCHEMA snowflake_catalog IS
    'The tables of the snowflake extension: the setups of time partitions and of tracked tables, and the tombstones';
GRANT USAGE ON SCHEMA snowflake_catalog TO PUBLIC;
ALTER TABLE snowflake_partitioned_tables SET SCHEMA snowflake_catalog;

-- Dumps and scripts from before 1.12 name the setups' table in the extension's schema. A view
-- of that name takes their SELECT, UPDATE and DELETE there (not INSERT ... ON CONFLICT, nor
-- TRUNCATE), and an INSTEAD OF trigger takes their INSERT and the COPY of an older dump's
-- setups, which a restore into 1.12 would otherwise fail. Schema tools list
-- tables, not views, and pg_dump leaves a member of the extension out. Its rights are the
-- table's: anyone reads, and only the table's owner writes, through it as directly.
CREATE VIEW snowflake_partitioned_tables AS
SELECT parent, every, ahead, retain, time_zone, drop_expired
FROM snowflake_catalog.snowflake_partitioned_tables;
GRANT SELECT ON snowflake_partitioned_tables TO PUBLIC;
COMMENT ON VIEW snowflake_partitioned_tables IS
    'The setups of time partitions, where 1.7 to 1.11 kept them: snowflake_catalog.snowflake_partitioned_tables since 1.12';
CREATE FUNCTION snowflake_insert_setup_of_older_dump() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $insert$
BEGIN
    INSERT INTO snowflake_catalog.snowflake_partitioned_tables
        (parent, every, ahead, retain, time_zone, drop_expired)
    VALUES (NEW.parent, NEW.every, NEW.ahead, NEW.retain, NEW.time_zone, NEW.drop_expired);
    RETURN NEW;
END
$insert$;
REVOKE EXECUTE ON FUNCTION snowflake_insert_setup_of_older_dump() FROM PUBLIC;
COMMENT ON FUNCTION snowflake_insert_setup_of_older_dump() IS
    'Trigger of the view snowflake_partitioned_tables: inserts a row of a dump or script from before 1.12 into snowflake_catalog.snowflake_partitioned_tables';
CREATE TRIGGER snowflake_insert_setup_of_older_dump
    INSTEAD OF INSERT ON snowflake_partitioned_tables
    FOR EACH ROW EXECUTE FUNCTION snowflake_insert_setup_of_older_dump();

-- One row per tracked table: its version column, its key, how long its tombstones are kept, and
-- the version below which they were trimmed. A role writes only the rows of tables it owns,
-- through the functions below, which run as the caller; it may change keep_tombstones by hand.
-- Only snowflake_trim_tombstones(), as the extension's owner, moves trimmed_below, which readers
-- trust. pg_dump keeps the rows.
CREATE TABLE snowflake_catalog.snowflake_tracked_tables (
    tracked regclass PRIMARY KEY,
    version_column name NOT NULL,
    key_columns name[] NOT NULL,
    keep_tombstones interval NOT NULL DEFAULT '7 days'
        CHECK (keep_tombstones > '0' AND keep_tombstones <= '100 years'),
    tracked_from bigint NOT NULL DEFAULT 0,
    began_empty boolean NOT NULL DEFAULT true,
    trimmed_below bigint NOT NULL DEFAULT 0
);
SELECT pg_catalog.pg_extension_config_dump('snowflake_catalog.snowflake_tracked_tables', '');
COMMENT ON TABLE snowflake_catalog.snowflake_tracked_tables IS
    'The tables that snowflake_track_changes() made followable: version column, key, trimmed versions';
ALTER TABLE snowflake_catalog.snowflake_tracked_tables ENABLE ROW LEVEL SECURITY;
CREATE POLICY owners_write ON snowflake_catalog.snowflake_tracked_tables
    USING (pg_catalog.pg_has_role((SELECT c.relowner FROM pg_catalog.pg_class AS c
                                   WHERE c.oid = tracked), 'USAGE'));
CREATE POLICY everyone_reads ON snowflake_catalog.snowflake_tracked_tables FOR SELECT USING (true);
GRANT SELECT, DELETE ON snowflake_catalog.snowflake_tracked_tables TO PUBLIC;
GRANT INSERT (tracked, version_column, key_columns, keep_tombstones, tracked_from, began_empty),
      UPDATE (keep_tombstones)
    ON snowflake_catalog.snowflake_tracked_tables TO PUBLIC;

-- The deletes, old keys and truncations of tracked tables, each under the tracked table (the
-- root of a partitioned one). Only the extension's owner writes here (the C trigger inserts as
-- that owner). A role reads the tombstones of the tables it may read whole: a key alone cannot
-- be judged by a policy of the table.
CREATE TABLE snowflake_catalog.snowflake_tombstones (
    tracked regclass NOT NULL,
    version bigint NOT NULL,
    kind "char" NOT NULL,
    key jsonb,
    PRIMARY KEY (tracked, version)
);
SELECT pg_catalog.pg_extension_config_dump('snowflake_catalog.snowflake_tombstones', '');
COMMENT ON TABLE snowflake_catalog.snowflake_tombstones IS
    'The deletes, old keys and truncations of tracked tables, read through snowflake_changes()';
ALTER TABLE snowflake_catalog.snowflake_tombstones ENABLE ROW LEVEL SECURITY;
CREATE POLICY readers_of_the_table ON snowflake_catalog.snowflake_tombstones FOR SELECT
    USING (CASE WHEN pg_catalog.has_table_privilege(tracked, 'SELECT')
                THEN NOT pg_catalog.row_security_active(tracked) ELSE false END);
-- The versions lead an index, so that the floor from stored keys reads them after a start without
-- the mark file (src/pg/keys_floor/keys_queries.hpp).
CREATE INDEX ON snowflake_catalog.snowflake_tombstones (version);
GRANT SELECT ON snowflake_catalog.snowflake_tombstones TO PUBLIC;

-- C: a row that a logical replication worker applies to the two tables above is skipped, so
-- that a subscriber keeps its own tracking and tombstones; the tombstones its own tracked tables
-- keep as the worker applies changes are written. It fires only where session_replication_role
-- is replica, as in those workers. Not for PUBLIC.
CREATE FUNCTION snowflake_keep_changes_local() RETURNS trigger
    AS 'MODULE_PATHNAME', 'snowflake_keep_changes_local' LANGUAGE C;
REVOKE EXECUTE ON FUNCTION snowflake_keep_changes_local() FROM PUBLIC;
COMMENT ON FUNCTION snowflake_keep_changes_local() IS
    'Trigger of snowflake_tracked_tables and snowflake_tombstones: skips the rows a logical replication worker applies, except the subscriber''s own tombstones';
CREATE TRIGGER snowflake_keep_changes_local
    BEFORE INSERT OR UPDATE OR DELETE ON snowflake_catalog.snowflake_tracked_tables
    FOR EACH ROW EXECUTE FUNCTION snowflake_keep_changes_local();
ALTER TABLE snowflake_catalog.snowflake_tracked_tables ENABLE REPLICA TRIGGER snowflake_keep_changes_local;
CREATE TRIGGER snowflake_keep_changes_local
    BEFORE INSERT OR UPDATE OR DELETE ON snowflake_catalog.snowflake_tombstones
    FOR EACH ROW EXECUTE FUNCTION snowflake_keep_changes_local();
ALTER TABLE snowflake_catalog.snowflake_tombstones ENABLE REPLICA TRIGGER snowflake_keep_changes_local;

-- C: the BEFORE INSERT OR UPDATE row trigger that stamps the version column.
CREATE FUNCTION snowflake_stamp_version() RETURNS trigger
    AS 'MODULE_PATHNAME', 'snowflake_stamp_version' LANGUAGE C;
COMMENT ON FUNCTION snowflake_stamp_version() IS
    'Trigger of a tracked table: sets its version column from snowflake_nextval() on every insert and update';

-- C: the AFTER DELETE, UPDATE (of the key) and TRUNCATE triggers that keep tombstones.
CREATE FUNCTION snowflake_keep_tombstone() RETURNS trigger
    AS 'MODULE_PATHNAME', 'snowflake_keep_tombstone' LANGUAGE C;
COMMENT ON FUNCTION snowflake_keep_tombstone() IS
    'Trigger of a tracked table: keeps the key of a deleted row, the old key of a row whose key changed, or a truncation';

-- The primary key's columns of a table that can be tracked, or an error. A tombstone keeps the key
-- as JSON, written as the extension's owner, and snowflake_key_row() reads it back: only types
-- whose JSON form reads back the same under every session setting qualify (not float, interval or
-- money), and no type of a role's own, whose casts or output would run as that owner.
CREATE FUNCTION snowflake_key_columns(tracked regclass)
RETURNS name[]
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $keys$
DECLARE
    extension_schema CONSTANT name := (
        SELECT n.nspname FROM pg_extension AS e JOIN pg_namespace AS n ON n.oid = e.extnamespace
        WHERE e.extname = 'snowflake');
    id_type CONSTANT regtype := format('%I.snowflake', extension_schema)::regtype;
    keys name[];
BEGIN
    -- A valid primary key's key columns, not its INCLUDE columns, whose change is no key change.
    keys := ARRAY(SELECT a.attname FROM pg_index AS i
                  CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, n)
                  JOIN pg_attribute AS a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
                  WHERE i.indrelid = tracked AND i.indisprimary AND i.indisvalid
                    AND k.n <= i.indnkeyatts
                  ORDER BY k.n);
    IF cardinality(keys) = 0 THEN
        RAISE EXCEPTION '% has no valid primary key', tracked
            USING ERRCODE = 'invalid_table_definition',
                  DETAIL = 'A delete reaches readers as the key of the deleted row.',
                  HINT = 'Add a primary key to the table first, to its partitions too.';
    END IF;
    -- Reading a foreign table's rows connects elsewhere as whoever reads, here the extension's
    -- owner, who keeps the tombstones of a partition that leaves.
    IF EXISTS (SELECT FROM pg_partition_tree(tracked) AS p JOIN pg_class AS c ON c.oid = p.relid
               WHERE c.relkind = 'f') THEN
        RAISE EXCEPTION '% has a foreign table among its partitions', tracked
            USING ERRCODE = 'feature_not_supported',
                  HINT = 'Track a table whose partitions are all local tables.';
    END IF;
    IF cardinality(keys) > 8 OR EXISTS (
           SELECT FROM pg_attribute AS a
           WHERE a.attrelid = tracked AND a.attname = ANY (keys)
             AND a.atttypid NOT IN ('smallint'::regtype, 'integer'::regtype, 'bigint'::regtype,
                                    'numeric'::regtype, 'text'::regtype,
                                    'character varying'::regtype, 'character'::regtype,
                                    'uuid'::regtype, 'boolean'::regtype, 'date'::regtype,
                                    'timestamp without time zone'::regtype,
                                    'timestamp with time zone'::regtype, id_type)) THEN
        RAISE EXCEPTION 'the primary key of % has more than 8 columns, or a column of a type that tombstones cannot keep', tracked
            USING ERRCODE = 'feature_not_supported',
                  DETAIL = 'A key column must be smallint, integer, bigint, numeric, text, varchar, char, uuid, boolean, date, timestamp, timestamptz or snowflake.',
                  HINT = 'Track a table whose primary key has such columns, such as bigint or the snowflake type.';
    END IF;
    RETURN keys;
END
$keys$;
COMMENT ON FUNCTION snowflake_key_columns(regclass) IS
    'The primary key columns of a table that snowflake_track_changes() can track, or an error naming why not';

-- C: a row of the table's type with the key's columns read from a tombstone and every other column
-- NULL, made without the checks of the other columns' domains, which would run code of the
-- table's owner as the reader, and refuse a NULL where the domain is NOT NULL.
CREATE FUNCTION snowflake_key_row(table_row anyelement, key jsonb) RETURNS anyelement
    AS 'MODULE_PATHNAME', 'snowflake_key_row' LANGUAGE C STABLE;
COMMENT ON FUNCTION snowflake_key_row(anyelement, jsonb) IS
    'A row of the table''s type holding a tombstone''s key and NULL elsewhere, as snowflake_changes() returns a delete';

-- A tombstone for each row of a partition that leaves a tracked table by TRUNCATE, DROP or
-- DETACH, which fire no row trigger. The utility hook (src/pg/changes/partition_moves.cpp) calls
-- it as the extension's owner, with the partition locked, before the statement runs; it reads
-- only the key's columns, of built-in types. Not for PUBLIC.
CREATE FUNCTION snowflake_keep_leaving_rows(leaving regclass)
RETURNS bigint
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $leaving$
DECLARE
    extension_schema CONSTANT name := (
        SELECT n.nspname FROM pg_extension AS e JOIN pg_namespace AS n ON n.oid = e.extnamespace
        WHERE e.extname = 'snowflake');
    root CONSTANT regclass := pg_partition_root(leaving);
    tracked boolean;
    keys name[];
    kept bigint;
BEGIN
    EXECUTE 'SELECT EXISTS (SELECT FROM snowflake_catalog.snowflake_tracked_tables AS t WHERE t.tracked = $1)'
        INTO tracked USING root;
    IF root = leaving OR NOT tracked THEN
        RETURN 0;
    END IF;
    -- From the catalog and checked again: the setup's row is its table owner's to write.
    EXECUTE format('SELECT %I.snowflake_key_columns($1)', extension_schema) INTO keys USING root;
    EXECUTE format('INSERT INTO snowflake_catalog.snowflake_tombstones (tracked, version, kind, key) '
                   'SELECT $1, %1$I.snowflake_nextval(), ''d'', jsonb_build_object(%2$s) FROM %3$s AS p',
                   extension_schema,
                   (SELECT string_agg(format('%L, p.%I', k, k), ', ') FROM unnest(keys) AS k),
                   leaving)
        USING root;
    GET DIAGNOSTICS kept = ROW_COUNT;
    RETURN kept;
END
$leaving$;
REVOKE EXECUTE ON FUNCTION snowflake_keep_leaving_rows(regclass) FROM PUBLIC;
COMMENT ON FUNCTION snowflake_keep_leaving_rows(regclass) IS
    'Keeps a tombstone for each row of a partition that leaves a tracked table by TRUNCATE, DROP or DETACH; the extension calls it';

-- After any DROP, the tracking and the tombstones of a dropped tracked table go, so that no row
-- outlives its table and a later table with the same OID is not taken for it. Runs as the
-- extension's owner, who alone writes tombstones.
CREATE FUNCTION snowflake_forget_dropped_tracking() RETURNS event_trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $dropped$
DECLARE
    extension_schema CONSTANT name := (
        SELECT n.nspname FROM pg_extension AS e JOIN pg_namespace AS n ON n.oid = e.extnamespace
        WHERE e.extname = 'snowflake');
    dropped CONSTANT oid[] := ARRAY(SELECT d.objid FROM pg_event_trigger_dropped_objects() AS d
                                    WHERE d.classid = 'pg_class'::regclass AND d.objsubid = 0);
BEGIN
    IF cardinality(dropped) = 0 OR extension_schema IS NULL
       OR to_regclass('snowflake_catalog.snowflake_tombstones') IS NULL
       OR to_regclass('snowflake_catalog.snowflake_tombstones') = ANY (dropped) THEN
        RETURN;
    END IF;
    EXECUTE 'DELETE FROM snowflake_catalog.snowflake_tombstones AS d WHERE d.tracked::oid = ANY ($1)' USING dropped;
    EXECUTE 'DELETE FROM snowflake_catalog.snowflake_tracked_tables AS t WHERE t.tracked::oid = ANY ($1)' USING dropped;
END
$dropped$;
REVOKE EXECUTE ON FUNCTION snowflake_forget_dropped_tracking() FROM PUBLIC;
COMMENT ON FUNCTION snowflake_forget_dropped_tracking() IS
    'Event trigger on sql_drop: removes the tracking and the tombstones of dropped tracked tables';
CREATE EVENT TRIGGER snowflake_forget_dropped_tracking ON sql_drop
    EXECUTE FUNCTION snowflake_forget_dropped_tracking();
COMMENT ON EVENT TRIGGER snowflake_forget_dropped_tracking IS
    'Removes the tracking and the tombstones of a tracked table when the table is dropped';

-- Makes a table followable by snowflake_changes(). Runs as the caller, who must own the table:
-- PostgreSQL checks that at each ALTER TABLE, CREATE INDEX and CREATE TRIGGER.
CREATE FUNCTION snowflake_track_changes(tracked regclass, version_column name DEFAULT 'version',
                                        keep_tombstones interval DEFAULT '7 days')
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $track$
DECLARE
    extension_schema CONSTANT name := (
        SELECT n.nspname FROM pg_extension AS e JOIN pg_namespace AS n ON n.oid = e.extnamespace
        WHERE e.extname = 'snowflake');
    id_type CONSTANT regtype := format('%I.snowflake', extension_schema)::regtype;
    kind "char";
    already boolean;
    keys name[];
    column_type regtype;
    bound bigint;
    empty boolean;
BEGIN
    IF tracked IS NULL OR version_column IS NULL OR keep_tombstones IS NULL
       OR keep_tombstones <= '0' OR keep_tombstones > '100 years' THEN
        RAISE EXCEPTION 'snowflake_track_changes() needs a table, a version column name and a time to keep tombstones from above zero to 100 years'
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Call it as SELECT snowflake_track_changes(''orders''), which keeps tombstones 7 days.';
    END IF;
    kind := (SELECT c.relkind FROM pg_class AS c WHERE c.oid = tracked);
    IF kind NOT IN ('r', 'p') OR (SELECT c.relispartition FROM pg_class AS c WHERE c.oid = tracked) THEN
        RAISE EXCEPTION '% is not a table, or is a partition', tracked
            USING ERRCODE = 'wrong_object_type',
                  HINT = 'Track an ordinary or a partitioned table; a partitioned table is tracked with all its partitions.';
    END IF;
    -- Crash recovery empties an unlogged table, and a temporary one goes with its session, each
    -- without a tombstone: the table and every partition must be permanent. Rows of an
    -- inheritance child are read with their parent but fire the child's triggers alone.
    IF EXISTS (SELECT FROM pg_partition_tree(tracked) AS p JOIN pg_class AS c ON c.oid = p.relid
               WHERE c.relpersistence <> 'p')
       OR EXISTS (SELECT FROM pg_inherits AS i JOIN pg_class AS c ON c.oid = i.inhrelid
                  WHERE i.inhparent = tracked AND NOT c.relispartition) THEN
        RAISE EXCEPTION '% is unlogged, temporary, or has inheritance children', tracked
            USING ERRCODE = 'feature_not_supported',
                  DETAIL = 'Their rows can go or be read without a version or a tombstone.',
                  HINT = 'Track a permanent table, or a partitioned one.';
    END IF;
    EXECUTE 'SELECT EXISTS (SELECT FROM snowflake_catalog.snowflake_tracked_tables AS t '
            'WHERE t.tracked = $1)'
        INTO already USING tracked;
    IF already THEN
        RAISE EXCEPTION '% is tracked already', tracked
            USING ERRCODE = 'duplicate_object',
                  HINT = 'Read its changes with snowflake_changes().';
    END IF;
    EXECUTE format('SELECT %I.snowflake_key_columns($1)', extension_schema) INTO keys USING tracked;
    IF version_column = ANY (keys) THEN
        RAISE EXCEPTION 'the version column "%" is part of the primary key of %', version_column, tracked
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Name another column as version_column; it is added if it is missing.';
    END IF;
    column_type := (SELECT a.atttypid FROM pg_attribute AS a
                    WHERE a.attrelid = tracked AND a.attname = version_column
                      AND a.attnum > 0 AND NOT a.attisdropped);
    IF EXISTS (SELECT FROM pg_attribute AS a
               WHERE a.attrelid = tracked AND a.attname = version_column AND a.attgenerated <> '') THEN
        RAISE EXCEPTION 'column "%" of % is generated', version_column, tracked
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Name a column that is not generated, or a new one.';
    END IF;
    IF column_type IS NULL THEN
        EXECUTE format('ALTER TABLE %s ADD COLUMN %I bigint', tracked, version_column);
    ELSIF column_type NOT IN ('bigint'::regtype, id_type) THEN
        RAISE EXCEPTION 'column "%" of % is of type %, not bigint or snowflake', version_column, tracked, column_type
            USING ERRCODE = 'datatype_mismatch',
                  HINT = 'Name a column of type bigint or snowflake, or a new one.';
    END IF;
    IF NOT EXISTS (SELECT FROM pg_index AS i JOIN pg_attribute AS a
                     ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
                   WHERE i.indrelid = tracked AND i.indpred IS NULL AND a.attname = version_column) THEN
        EXECUTE format('CREATE INDEX ON %s (%I)', tracked, version_column);
    END IF;
    EXECUTE format('CREATE TRIGGER snowflake_stamp_version BEFORE INSERT OR UPDATE ON %s '
                   'FOR EACH ROW EXECUTE FUNCTION %I.snowflake_stamp_version(%L)',
                   tracked, extension_schema, version_column);
    EXECUTE format('CREATE TRIGGER snowflake_keep_deletes AFTER DELETE ON %s '
                   'FOR EACH ROW EXECUTE FUNCTION %I.snowflake_keep_tombstone(%s)',
                   tracked, extension_schema,
                   (SELECT string_agg(quote_literal(k), ', ') FROM unnest(keys) AS k));
    EXECUTE format('CREATE TRIGGER snowflake_keep_old_keys AFTER UPDATE ON %s FOR EACH ROW '
                   'WHEN ((%s) IS DISTINCT FROM (%s)) '
                   'EXECUTE FUNCTION %I.snowflake_keep_tombstone(%s)',
                   tracked,
                   (SELECT string_agg(format('OLD.%I', k), ', ') FROM unnest(keys) AS k),
                   (SELECT string_agg(format('NEW.%I', k), ', ') FROM unnest(keys) AS k),
                   extension_schema,
                   (SELECT string_agg(quote_literal(k), ', ') FROM unnest(keys) AS k));
    EXECUTE format('CREATE TRIGGER snowflake_keep_truncations AFTER TRUNCATE ON %s '
                   'FOR EACH STATEMENT EXECUTE FUNCTION %I.snowflake_keep_tombstone()',
                   tracked, extension_schema);
    -- Always, so that a logical replication subscriber stamps and keeps the changes it applies
    -- with versions of its own, which its own bound covers.
    EXECUTE format('ALTER TABLE %s ENABLE ALWAYS TRIGGER snowflake_stamp_version, '
                   'ENABLE ALWAYS TRIGGER snowflake_keep_deletes, '
                   'ENABLE ALWAYS TRIGGER snowflake_keep_old_keys, '
                   'ENABLE ALWAYS TRIGGER snowflake_keep_truncations', tracked);
    -- The triggers' lock waited for every writer that was not stamped: the rows there now are
    -- all a reader would miss. A cursor below this bound is refused, unless it is 0 and the
    -- table was empty, so that no copy from an earlier tracking follows on past a gap.
    EXECUTE format('SELECT %I.snowflake_settled_bound()', extension_schema) INTO bound;
    EXECUTE format('SELECT NOT EXISTS (SELECT FROM %s)', tracked) INTO empty;
    EXECUTE 'INSERT INTO snowflake_catalog.snowflake_tracked_tables (tracked, version_column, key_columns, '
            'keep_tombstones, tracked_from, began_empty) VALUES ($1, $2, $3, $4, $5, $6)'
        USING tracked, version_column, keys, keep_tombstones, bound, empty;
END
$track$;
COMMENT ON FUNCTION snowflake_track_changes(regclass, name, interval) IS
    'Makes a table followable by snowflake_changes(): a version column from the generator on every insert and update, tombstones for deletes, key changes and truncations';

-- Undoes snowflake_track_changes(): the triggers and the tombstones go; the version column and its
-- index stay, as data of the table's own.
CREATE FUNCTION snowflake_untrack_changes(tracked regclass)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $untrack$
DECLARE
    extension_schema CONSTANT name := (
        SELECT n.nspname FROM pg_extension AS e JOIN pg_namespace AS n ON n.oid = e.extnamespace
        WHERE e.extname = 'snowflake');
    trigger_name name;
    known boolean;
BEGIN
    EXECUTE 'SELECT EXISTS (SELECT FROM snowflake_catalog.snowflake_tracked_tables AS t '
            'WHERE t.tracked = $1)'
        INTO known USING tracked;
    IF NOT known THEN
        RAISE EXCEPTION '% is not tracked', coalesce(tracked::text, 'NULL')
            USING ERRCODE = 'undefined_object',
                  HINT = 'See the tracked tables in snowflake_tracked_tables.';
    END IF;
    FOREACH trigger_name IN ARRAY ARRAY['snowflake_stamp_version', 'snowflake_keep_deletes',
                                        'snowflake_keep_old_keys', 'snowflake_keep_truncations'] LOOP
        EXECUTE format('DROP TRIGGER IF EXISTS %I ON %s', trigger_name, tracked);
    END LOOP;
    EXECUTE 'DELETE FROM snowflake_catalog.snowflake_tracked_tables AS t WHERE t.tracked = $1' USING tracked;
    EXECUTE format('SELECT %I.snowflake_forget_tombstones($1)', extension_schema) USING tracked;
END
$untrack$;
COMMENT ON FUNCTION snowflake_untrack_changes(regclass) IS
    'Undoes snowflake_track_changes(): the triggers and tombstones go, the version column and its index stay';

-- The tombstones of a table no longer tracked go. Runs as the extension's owner, who alone
-- writes them; it removes nothing while the table is tracked, so no role can empty the
-- tombstones of a table that others follow.
CREATE FUNCTION snowflake_forget_tombstones(tracked regclass)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $forget$
DECLARE
    extension_schema CONSTANT name := (
        SELECT n.nspname FROM pg_extension AS e JOIN pg_namespace AS n ON n.oid = e.extnamespace
        WHERE e.extname = 'snowflake');
    still_tracked boolean;
BEGIN
    EXECUTE 'SELECT EXISTS (SELECT FROM snowflake_catalog.snowflake_tracked_tables AS t '
            'WHERE t.tracked = $1)'
        INTO still_tracked USING tracked;
    IF still_tracked THEN
        RAISE EXCEPTION '% is still tracked', tracked
            USING ERRCODE = 'object_in_use',
                  HINT = 'Its owner calls snowflake_untrack_changes(), which forgets its tombstones.';
    END IF;
    EXECUTE 'DELETE FROM snowflake_catalog.snowflake_tombstones AS d WHERE d.tracked = $1' USING tracked;
END
$forget$;
COMMENT ON FUNCTION snowflake_forget_tombstones(regclass) IS
    'Removes the tombstones of a table that is no longer tracked';

-- Trims the tombstones of every tracked table (or of one) older than its keep_tombstones, and
-- never at or above the settled bound: every transaction that drew a version below the bound has
-- ended, so no tombstone below it can commit after the trim. A reader whose cursor is below what
-- was trimmed then gets an error from snowflake_changes(). Runs as the extension's owner, who
-- alone writes tombstones; it removes only what each table's own setting says, so any role may
-- call it, and a scheduler should (doc/reference.md "Following changes"). Returns how many
-- tombstones went.
CREATE FUNCTION snowflake_trim_tombstones(tracked regclass DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $trim$
DECLARE
    extension_schema CONSTANT name := (
        SELECT n.nspname FROM pg_extension AS e JOIN pg_namespace AS n ON n.oid = e.extnamespace
        WHERE e.extname = 'snowflake');
    bound bigint;
    setup record;
    below bigint;
    removed bigint;
    total bigint := 0;
BEGIN
    EXECUTE format('SELECT %I.snowflake_settled_bound()', extension_schema) INTO bound;
    FOR setup IN EXECUTE 'SELECT t.tracked, t.keep_tombstones FROM snowflake_catalog.snowflake_tracked_tables AS t '
                         'WHERE $1 IS NULL OR t.tracked = $1 ORDER BY t.tracked'
                 USING tracked LOOP
        EXECUTE format('SELECT least($1, %1$I.snowflake_min_id(greatest('
                       'pg_catalog.now() - $2, %1$I.snowflake_timestamp(0))))', extension_schema)
            INTO below USING bound, setup.keep_tombstones;
        EXECUTE 'DELETE FROM snowflake_catalog.snowflake_tombstones AS d WHERE d.tracked = $1 AND d.version < $2' USING setup.tracked, below;
        GET DIAGNOSTICS removed = ROW_COUNT;
        EXECUTE 'UPDATE snowflake_catalog.snowflake_tracked_tables AS t SET trimmed_below = $2 '
                'WHERE t.tracked = $1 AND t.trimmed_below < $2'
            USING setup.tracked, below;
        total := total + removed;
    END LOOP;
    RETURN total;
END
$trim$;
COMMENT ON FUNCTION snowflake_trim_tombstones(regclass) IS
    'Removes the tombstones older than each tracked table''s keep_tombstones, below the settled bound; returns how many went';

-- Every change of a tracked table from after_version on and below the settled bound, in version
-- order: the latest state of each changed row ('row'), the key of each deleted row that is not
-- there again ('delete', the other columns NULL), each truncation ('truncate', no row), then one
-- last row ('next') whose version is the cursor to pass next. It reads the bound before the query
-- takes its snapshot, as snowflake_settled_rows() does, so no change below it is ever missed. On
-- a standby, where the bound refuses, settled_below is the primary's bound, read with
-- snowflake_settled_bound_lsn() and passed once the standby has replayed past its position.
CREATE FUNCTION snowflake_changes(table_row anyelement, after_version bigint, max_changes integer,
                                  settled_below bigint DEFAULT NULL)
RETURNS TABLE (version bigint, kind text, data anyelement)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $changes$
DECLARE
    extension_schema CONSTANT name := (
        SELECT n.nspname FROM pg_extension AS e JOIN pg_namespace AS n ON n.oid = e.extnamespace
        WHERE e.extname = 'snowflake');
    target CONSTANT regclass := (
        SELECT c.oid FROM pg_type AS t JOIN pg_class AS c ON c.oid = t.typrelid
        WHERE t.oid = pg_typeof(table_row) AND c.relkind IN ('r', 'p'));
    setup record;
    bound bigint;
    same_key text;
BEGIN
    IF target IS NULL OR after_version IS NULL OR max_changes IS NULL OR max_changes < 1 THEN
        RAISE EXCEPTION 'snowflake_changes() needs a table''s row type, a cursor and a page size of 1 or more'
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Call it as SELECT * FROM snowflake_changes(NULL::orders, 0, 1000).';
    END IF;
    -- A transaction's one snapshot was taken before the bound is read here: rows committed in
    -- between would be below the bound and unseen.
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'snowflake_changes() cannot run in a REPEATABLE READ or SERIALIZABLE transaction'
            USING ERRCODE = 'invalid_transaction_state',
                  DETAIL = 'Its snapshot was taken before the settled bound is read, so changes committed in between would be skipped.',
                  HINT = 'Run it in a READ COMMITTED transaction (the default).';
    END IF;
    EXECUTE 'SELECT t.version_column, t.key_columns, t.trimmed_below, t.tracked_from, '
            't.began_empty FROM snowflake_catalog.snowflake_tracked_tables AS t WHERE t.tracked = $1'
        INTO setup USING target;
    IF setup IS NULL THEN
        RAISE EXCEPTION '% is not tracked', target
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'Its owner makes it followable with snowflake_track_changes().';
    END IF;
    -- The tombstones are shown to readers with SELECT on the table; one with SELECT on its
    -- columns alone would see the rows and miss every delete.
    IF NOT has_table_privilege(target, 'SELECT') THEN
        RAISE EXCEPTION 'permission denied to follow the changes of %', target
            USING ERRCODE = 'insufficient_privilege',
                  DETAIL = 'Following a table needs SELECT on the table, not only on its columns.',
                  HINT = 'GRANT SELECT ON the table to the reader.';
    END IF;
    -- Tombstones keep keys alone, which no policy can judge: a reader whose rows policies filter
    -- would learn the keys of deleted rows it could never read.
    IF row_security_active(target) THEN
        RAISE EXCEPTION 'row-level security applies to % for this role, so it cannot follow its changes', target
            USING ERRCODE = 'insufficient_privilege',
                  DETAIL = 'A delete reaches readers as its key, which no policy can judge.',
                  HINT = 'Follow the table as a role that policies do not apply to (its owner, or a role with BYPASSRLS).';
    END IF;
    -- On a standby the bound is the primary's, passed in once replay has passed its position.
    IF settled_below IS NULL THEN
        EXECUTE format('SELECT %I.snowflake_settled_bound()', extension_schema) INTO bound;
    ELSE
        bound := settled_below;
    END IF;
    IF after_version < setup.tracked_from AND NOT (after_version = 0 AND setup.began_empty) THEN
        RAISE EXCEPTION 'the cursor % is older than the tracking of %, which began at version %', after_version, target, setup.tracked_from
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = 'Rows written before the tracking began have no version, and changes made while it was off were kept nowhere.',
                  HINT = 'Copy the table and follow it from the bound read before the copy (doc/reference.md "Following changes").';
    END IF;
    -- The bound never goes back, so a cursor above it came from elsewhere: from another server,
    -- or from before a start without the mark file, whose bound is 0 until the first id.
    IF after_version > bound THEN
        RAISE EXCEPTION 'the cursor % is above the settled bound %', after_version, bound
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = 'A cursor of this server never passes its bound, which never goes back, except to 0 after a start without the mark file.',
                  HINT = 'Pass a cursor that this server''s snowflake_changes() returned; after a start without the mark file, call it again once an id was drawn.';
    END IF;
    same_key := (SELECT string_agg(format('t.%1$I = p.%1$I', k), ' AND ')
                 FROM unnest(setup.key_columns) AS k);
    -- A full page's cursor is its last version plus one; a page that is not full has read
    -- everything below the bound, so a quiet table's cursor moves up to the bound. Each side is
    -- ordered and cut on its own, so that the planner reads the version index, not every row.
    RETURN QUERY EXECUTE format(
        'WITH page AS ('
        '  SELECT c.v, c.k, c.r FROM ('
        '    (SELECT t.%1$I AS v, ''row'' AS k, ROW(t.*)::%2$s AS r FROM %2$s AS t'
        '     WHERE t.%1$I >= $1 AND t.%1$I < $2 ORDER BY t.%1$I LIMIT $3)'
        '    UNION ALL'
        '    (SELECT d.version, CASE d.kind WHEN ''t'' THEN ''truncate'' ELSE ''delete'' END,'
        '            CASE d.kind WHEN ''d'' THEN %3$I.snowflake_key_row(NULL::%2$s, d.key) END'
        '     FROM snowflake_catalog.snowflake_tombstones AS d'
        '     WHERE d.tracked = %4$L AND d.version >= $1 AND d.version < $2'
        '       AND (d.kind = ''t'' OR NOT EXISTS (SELECT FROM %2$s AS t,'
        '            %3$I.snowflake_key_row(NULL::%2$s, d.key) AS p WHERE %5$s))'
        '     ORDER BY d.version LIMIT $3)'
        '  ) AS c ORDER BY c.v LIMIT $3)'
        'SELECT v, k, r FROM ('
        '  SELECT false AS last, v, k, r FROM page'
        '  UNION ALL'
        '  SELECT true, CASE WHEN count(*) = $3 THEN max(v) + 1 ELSE greatest($2, $1) END,'
        '         ''next'', NULL FROM page'
        ') AS ordered ORDER BY last, v',
        setup.version_column, target, extension_schema, target::oid, same_key)
        USING after_version, bound, max_changes;
    -- Read after the page, in a later snapshot: a trim that committed before the page's snapshot
    -- is seen here, so a page it emptied is never returned.
    EXECUTE 'SELECT t.trimmed_below FROM snowflake_catalog.snowflake_tracked_tables AS t '
            'WHERE t.tracked = $1'
        INTO setup.trimmed_below USING target;
    IF after_version < setup.trimmed_below THEN
        RAISE EXCEPTION 'the tombstones of % below version % were trimmed, and the cursor % is older', target, setup.trimmed_below, after_version
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = 'Deletes after the cursor may be gone, so a copy that follows from it could keep rows that no longer exist.',
                  HINT = 'Copy the table again and follow it from the bound read before the copy (doc/reference.md "Following changes").';
    END IF;
END
$changes$;
COMMENT ON FUNCTION snowflake_changes(anyelement, bigint, integer, bigint) IS
    'The changes of a tracked table from after_version on, below the settled bound, in version order, then the cursor to pass next';

-- The intervals of time partitions (1.12 adds quarters and years), from the library's one table
-- of them, shortest first, each with the suffix that names a partition of it. Messages and hints
-- are made from the same table; the comments below name this function rather than a list. C;
-- STABLE: a new library may hold more. For PUBLIC: it reads no table.
CREATE FUNCTION snowflake_partition_intervals(OUT every interval, OUT name_suffix text)
RETURNS SETOF record
    AS 'MODULE_PATHNAME', 'snowflake_partition_intervals'
    LANGUAGE C STABLE STRICT;
COMMENT ON FUNCTION snowflake_partition_intervals() IS
    'The intervals a table can be partitioned by, shortest first, with an example of the suffix that names a partition of each';
COMMENT ON FUNCTION snowflake_partition_table(regclass, interval, integer, interval, text, boolean) IS
    'Sets a table partitioned by range on its bigint or snowflake key up for partitions of one of snowflake_partition_intervals() aligned in time_zone: adopts the partitions that line up, creates those missing from the oldest key to ahead periods past the current one, and detaches (drop_expired: drops) those older than retain; returns what it did';
COMMENT ON FUNCTION snowflake_partition_boundaries(interval, text, timestamptz, timestamptz) IS
    'The periods of one of snowflake_partition_intervals() in time_zone that time partitions would have, from the one that holds since through those that begin before until, within the time of Snowflake ids (2010-11-04 to 2080): their start, their end and the suffix of their partition''s name';

-- The setup of one table as the call that makes it again (1.12). The setups are rows of the
-- extension's configuration table, which only a dump of the whole database carries: pg_dump -t
-- and -n, and pg_restore -t and -n, restore the table and its partitions without their setup.
-- Run what this prints after such a restore: the call adopts the partitions that line up. NULL
-- for a table without a setup. SQL, STABLE, for PUBLIC: anyone reads the setups. The names are
-- qualified with this database's schemas, the interval is written in the style every session
-- reads, and every argument is typed, so that no overload of other types that a role made is
-- called in its place.
CREATE FUNCTION snowflake_partition_setup_sql(parent regclass) RETURNS text
    LANGUAGE sql STABLE STRICT
    SET search_path = pg_catalog, pg_temp
    SET intervalstyle = postgres
AS $$
SELECT format('SELECT * FROM %s.snowflake_partition_table(%L::pg_catalog.regclass, '
              '%L::pg_catalog.interval, ahead => %s::pg_catalog.int4, '
              'retain => %L::pg_catalog.interval, time_zone => %L::pg_catalog.text, '
              'drop_expired => %s::pg_catalog.bool);',
              (SELECT quote_ident(n.nspname) FROM pg_extension AS e
               JOIN pg_namespace AS n ON n.oid = e.extnamespace WHERE e.extname = 'snowflake'),
              s.parent::text, s.every::text, s.ahead, s.retain::text, s.time_zone,
              CASE WHEN s.drop_expired THEN 'true' ELSE 'false' END)
FROM snowflake_catalog.snowflake_partitioned_tables AS s
WHERE s.parent OPERATOR(pg_catalog.=) $1
$$;
COMMENT ON FUNCTION snowflake_partition_setup_sql(regclass) IS
    'The setup of a table for time partitions as a call of snowflake_partition_table() that makes it again, to run after pg_dump -t or -n, or pg_restore -t or -n, which carry no setup; NULL for a table without one';

-- The scheduled run is fair to the roles whose tables it maintains (1.12): each table in a
-- background worker of its own, which a table owner's code can end without ending the run,
-- owners in turns, and each owner's tables within snowflake.partition_owner_share of the run
-- (doc/security.md "A fair scheduled run"). The library does it; only the comment changes.
COMMENT ON PROCEDURE snowflake_run_partition_maintenance() IS
    'Maintains every table set up for time partitions whose owner the caller acts for, each in a background worker and a transaction of its own, owners in turns and each within snowflake.partition_owner_share of the run, and does nothing while another run of the same role is in progress; reports what it did as notices';
