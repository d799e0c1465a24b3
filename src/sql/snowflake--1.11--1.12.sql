-- The snowflake extension, from 1.11 to 1.12: following every change of a table. A tracked
-- table's inserts and updates take a version from the generator, its deletes, key changes and
-- truncations leave tombstones, and snowflake_changes() reads them below the settled bound.
\echo Use "ALTER EXTENSION snowflake UPDATE TO '1.12'" to load this file. \quit

-- One row per tracked table: its version column, its key, and the version below which its
-- tombstones were trimmed. A role writes only the rows of tables it owns, through the functions
-- below, which run as the caller; pg_dump keeps the rows.
CREATE TABLE snowflake_tracked_tables (
    tracked regclass PRIMARY KEY,
    version_column name NOT NULL,
    key_columns name[] NOT NULL,
    trimmed_below bigint NOT NULL DEFAULT 0
);
SELECT pg_catalog.pg_extension_config_dump('snowflake_tracked_tables', '');
COMMENT ON TABLE snowflake_tracked_tables IS
    'The tables that snowflake_track_changes() made followable: version column, key, trimmed versions';
ALTER TABLE snowflake_tracked_tables ENABLE ROW LEVEL SECURITY;
CREATE POLICY owners_write ON snowflake_tracked_tables
    USING (pg_catalog.pg_has_role((SELECT c.relowner FROM pg_catalog.pg_class AS c
                                   WHERE c.oid = tracked), 'USAGE'));
CREATE POLICY everyone_reads ON snowflake_tracked_tables FOR SELECT USING (true);
GRANT SELECT, INSERT, UPDATE, DELETE ON snowflake_tracked_tables TO PUBLIC;

-- The deletes, old keys and truncations of tracked tables. Only the extension's owner writes
-- here (the C trigger inserts as that owner); a role reads the tombstones of the tables it may
-- read, through snowflake_changes().
CREATE TABLE snowflake_tombstones (
    tracked regclass NOT NULL,
    version bigint NOT NULL,
    kind "char" NOT NULL,
    key jsonb,
    PRIMARY KEY (tracked, version)
);
SELECT pg_catalog.pg_extension_config_dump('snowflake_tombstones', '');
COMMENT ON TABLE snowflake_tombstones IS
    'The deletes, old keys and truncations of tracked tables, read through snowflake_changes()';
ALTER TABLE snowflake_tombstones ENABLE ROW LEVEL SECURITY;
CREATE POLICY readers_of_the_table ON snowflake_tombstones FOR SELECT
    USING (EXISTS (SELECT FROM pg_catalog.pg_partition_ancestors(tracked) AS a
                   WHERE pg_catalog.has_table_privilege(a.relid, 'SELECT')));
GRANT SELECT ON snowflake_tombstones TO PUBLIC;

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

-- Makes a table followable by snowflake_changes(). Runs as the caller, who must own the table:
-- PostgreSQL checks that at each ALTER TABLE, CREATE INDEX and CREATE TRIGGER.
CREATE FUNCTION snowflake_track_changes(tracked regclass, version_column name DEFAULT 'version')
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
BEGIN
    IF tracked IS NULL OR version_column IS NULL THEN
        RAISE EXCEPTION 'snowflake_track_changes() needs a table and a version column name'
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Call it as SELECT snowflake_track_changes(''orders'').';
    END IF;
    kind := (SELECT c.relkind FROM pg_class AS c WHERE c.oid = tracked);
    IF kind NOT IN ('r', 'p') OR (SELECT c.relispartition FROM pg_class AS c WHERE c.oid = tracked) THEN
        RAISE EXCEPTION '% is not a table, or is a partition', tracked
            USING ERRCODE = 'wrong_object_type',
                  HINT = 'Track an ordinary or a partitioned table; a partitioned table is tracked with all its partitions.';
    END IF;
    EXECUTE format('SELECT EXISTS (SELECT FROM %I.snowflake_tracked_tables AS t '
                   'WHERE t.tracked = $1)', extension_schema)
        INTO already USING tracked;
    IF already THEN
        RAISE EXCEPTION '% is tracked already', tracked
            USING ERRCODE = 'duplicate_object',
                  HINT = 'Read its changes with snowflake_changes().';
    END IF;
    keys := ARRAY(SELECT a.attname FROM pg_index AS i
                  CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, n)
                  JOIN pg_attribute AS a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
                  WHERE i.indrelid = tracked AND i.indisprimary ORDER BY k.n);
    IF cardinality(keys) = 0 THEN
        RAISE EXCEPTION '% has no primary key', tracked
            USING ERRCODE = 'invalid_table_definition',
                  DETAIL = 'A delete reaches readers as the key of the deleted row.',
                  HINT = 'Add a primary key to the table first.';
    END IF;
    IF cardinality(keys) > 8 OR EXISTS (
           SELECT FROM pg_attribute AS a
           WHERE a.attrelid = tracked AND a.attname = ANY (keys)
             AND a.atttypid >= 16384 AND a.atttypid <> id_type) THEN
        RAISE EXCEPTION 'the primary key of % has more than 8 columns, or a column of a type not built into PostgreSQL', tracked
            USING ERRCODE = 'feature_not_supported',
                  DETAIL = 'Tombstones keep the key as JSON, written as the extension''s owner, which runs no role''s code.',
                  HINT = 'Track a table whose primary key has built-in types, such as bigint, or the snowflake type.';
    END IF;
    IF version_column = ANY (keys) THEN
        RAISE EXCEPTION 'the version column "%" is part of the primary key of %', version_column, tracked
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Name another column as version_column; it is added if it is missing.';
    END IF;
    column_type := (SELECT a.atttypid FROM pg_attribute AS a
                    WHERE a.attrelid = tracked AND a.attname = version_column
                      AND a.attnum > 0 AND NOT a.attisdropped);
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
    EXECUTE format('INSERT INTO %I.snowflake_tracked_tables (tracked, version_column, key_columns) '
                   'VALUES ($1, $2, $3)', extension_schema)
        USING tracked, version_column, keys;
END
$track$;
COMMENT ON FUNCTION snowflake_track_changes(regclass, name) IS
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
    EXECUTE format('SELECT EXISTS (SELECT FROM %I.snowflake_tracked_tables AS t '
                   'WHERE t.tracked = $1)', extension_schema)
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
    EXECUTE format('DELETE FROM %I.snowflake_tracked_tables AS t WHERE t.tracked = $1',
                   extension_schema) USING tracked;
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
    EXECUTE format('SELECT EXISTS (SELECT FROM %I.snowflake_tracked_tables AS t '
                   'WHERE t.tracked = $1)', extension_schema)
        INTO still_tracked USING tracked;
    IF still_tracked THEN
        RAISE EXCEPTION '% is still tracked', tracked
            USING ERRCODE = 'object_in_use',
                  HINT = 'Its owner calls snowflake_untrack_changes(), which forgets its tombstones.';
    END IF;
    EXECUTE format('DELETE FROM %I.snowflake_tombstones AS d WHERE d.tracked IN '
                   '(SELECT p.relid FROM pg_catalog.pg_partition_tree($1) AS p UNION SELECT $1)',
                   extension_schema) USING tracked;
END
$forget$;
COMMENT ON FUNCTION snowflake_forget_tombstones(regclass) IS
    'Removes the tombstones of a table that is no longer tracked';

-- Every change of a tracked table from after_version on and below the settled bound, in version
-- order: the latest state of each changed row ('row'), the key of each deleted row that is not
-- there again ('delete', the other columns NULL), each truncation ('truncate', no row), then one
-- last row ('next') whose version is the cursor to pass next. It reads the bound before the query
-- takes its snapshot, as snowflake_settled_rows() does, so no change below it is ever missed.
CREATE FUNCTION snowflake_changes(table_row anyelement, after_version bigint, max_changes integer)
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
    EXECUTE format('SELECT t.version_column, t.key_columns, t.trimmed_below '
                   'FROM %I.snowflake_tracked_tables AS t WHERE t.tracked = $1', extension_schema)
        INTO setup USING target;
    IF setup IS NULL THEN
        RAISE EXCEPTION '% is not tracked', target
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'Its owner makes it followable with snowflake_track_changes().';
    END IF;
    IF after_version < setup.trimmed_below THEN
        RAISE EXCEPTION 'the changes of % before version % were trimmed, and the cursor % is older', target, setup.trimmed_below, after_version
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = 'The deletes among them are gone, so a copy following from this cursor would keep rows that no longer exist.',
                  HINT = 'Copy the table again (doc/reference.md "Following changes"), then follow it from the bound read before the copy.';
    END IF;
    EXECUTE format('SELECT %I.snowflake_settled_bound()', extension_schema) INTO bound;
    same_key := (SELECT string_agg(format('t.%1$I = p.%1$I', k), ' AND ')
                 FROM unnest(setup.key_columns) AS k);
    -- A full page's cursor is its last version plus one; a page that is not full has read
    -- everything below the bound, so a quiet table's cursor moves up to the bound.
    RETURN QUERY EXECUTE format(
        'WITH page AS ('
        '  SELECT c.v, c.k, c.r FROM ('
        '    SELECT t.%1$I AS v, ''row'' AS k, t AS r FROM %2$s AS t'
        '    WHERE t.%1$I >= $1 AND t.%1$I < $2'
        '    UNION ALL'
        '    SELECT d.version, CASE d.kind WHEN ''t'' THEN ''truncate'' ELSE ''delete'' END,'
        '           CASE d.kind WHEN ''d'' THEN pg_catalog.jsonb_populate_record(NULL::%2$s, d.key) END'
        '    FROM %3$I.snowflake_tombstones AS d'
        '    WHERE d.tracked IN (SELECT p.relid FROM pg_catalog.pg_partition_tree(%4$L) AS p'
        '                        UNION ALL SELECT %4$L)'
        '      AND d.version >= $1 AND d.version < $2'
        '      AND (d.kind = ''t'' OR NOT EXISTS (SELECT FROM %2$s AS t,'
        '           pg_catalog.jsonb_populate_record(NULL::%2$s, d.key) AS p WHERE %5$s))'
        '  ) AS c ORDER BY c.v LIMIT $3)'
        'SELECT v, k, r FROM ('
        '  SELECT false AS last, v, k, r FROM page'
        '  UNION ALL'
        '  SELECT true, CASE WHEN count(*) = $3 THEN max(v) + 1 ELSE greatest($2, $1) END,'
        '         ''next'', NULL FROM page'
        ') AS ordered ORDER BY last, v',
        setup.version_column, target, extension_schema, target::oid, same_key)
        USING after_version, bound, max_changes;
END
$changes$;
COMMENT ON FUNCTION snowflake_changes(anyelement, bigint, integer) IS
    'The changes of a tracked table from after_version on, below the settled bound, in version order, then the cursor to pass next';
