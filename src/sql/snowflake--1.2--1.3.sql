-- The snowflake extension, from 1.2 to 1.3: converting a serial or identity key.
\echo Use "ALTER EXTENSION snowflake UPDATE TO '1.3'" to load this file. \quit

-- VOLATILE: it alters tables. PARALLEL UNSAFE (the default). CALLED ON NULL INPUT: a NULL
-- argument is refused rather than converting nothing unnoticed. SECURITY INVOKER (the default):
-- only the owner of the tables may convert them. Every step runs in the caller's transaction, so
-- an error leaves everything as it was. doc/reference.md "Converting a serial or identity column"
-- says what it does with each object.
CREATE FUNCTION snowflake_convert_column("table" regclass, "column" name)
RETURNS TABLE (object text, change text)
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $convert$
DECLARE
    target_table CONSTANT regclass := $1;
    target_column CONSTANT name := $2;
    -- The extension may have been moved to another schema; its functions are called through it.
    extension_schema CONSTANT name := (
        SELECT n.nspname FROM pg_extension AS e JOIN pg_namespace AS n ON n.oid = e.extnamespace
        WHERE e.extname = 'snowflake');
    target pg_class;
    attribute pg_attribute;
    column_text text;
    default_expression text;
    fed_by_sequence boolean;
    owned_sequence regclass;
    lowest_key bigint;
    highest_key bigint;
    lowest_new_id bigint;
    blockers text;
    reference record;
BEGIN
    IF target_table IS NULL OR target_column IS NULL THEN
        RAISE EXCEPTION 'snowflake_convert_column() needs a table and a column'
            USING ERRCODE = 'null_value_not_allowed',
                  HINT = 'Call it as snowflake_convert_column(''orders'', ''id'').';
    END IF;
    -- One id first: it refuses, with what to do, when the library is not preloaded, a node id is
    -- unset, the server is a standby or the clock is behind; then no new id could be made.
    EXECUTE format('SELECT %I.snowflake_nextval()', extension_schema);

    SELECT * INTO target FROM pg_class WHERE oid = target_table;
    column_text := format('%s.%I', target_table, target_column);
    IF target.relispartition THEN
        RAISE EXCEPTION '% is a partition', target_table
            USING ERRCODE = 'wrong_object_type',
                  DETAIL = 'A partition''s key is converted with its partitioned table.',
                  HINT = format('Convert the column of the partitioned table: SELECT * FROM '
                                'snowflake_convert_column(%L, %L).',
                                (SELECT i.inhparent::regclass::text FROM pg_inherits AS i
                                 WHERE i.inhrelid = target_table), target_column);
    END IF;
    IF target.relkind NOT IN ('r', 'p') THEN
        RAISE EXCEPTION '% is not a table', target_table
            USING ERRCODE = 'wrong_object_type',
                  HINT = 'Only the key of a plain or partitioned table can be converted.';
    END IF;
    IF NOT pg_has_role(target.relowner, 'USAGE') THEN
        RAISE EXCEPTION 'must be owner of table %', target_table
            USING ERRCODE = 'insufficient_privilege',
                  HINT = 'Run the conversion as the table''s owner.';
    END IF;

    SELECT * INTO attribute FROM pg_attribute
    WHERE attrelid = target_table AND attname = target_column AND attnum > 0 AND NOT attisdropped;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'column % does not exist', column_text
            USING ERRCODE = 'undefined_column';
    END IF;
    IF attribute.atttypid NOT IN ('int2'::regtype, 'int4'::regtype, 'int8'::regtype) THEN
        RAISE EXCEPTION 'column % is of type %, not an integer key', column_text,
                        format_type(attribute.atttypid, attribute.atttypmod)
            USING ERRCODE = 'datatype_mismatch',
                  HINT = 'Only smallint, integer and bigint keys fed by a sequence or an '
                         'identity can be converted.';
    END IF;
    SELECT pg_get_expr(d.adbin, d.adrelid) INTO default_expression FROM pg_attrdef AS d
    WHERE d.adrelid = target_table AND d.adnum = attribute.attnum;
    fed_by_sequence := attribute.attidentity <> '' OR EXISTS (
        SELECT FROM pg_attrdef AS d
        JOIN pg_depend AS dep ON dep.classid = 'pg_attrdef'::regclass AND dep.objid = d.oid
        JOIN pg_class AS s ON dep.refclassid = 'pg_class'::regclass AND s.oid = dep.refobjid
        WHERE d.adrelid = target_table AND d.adnum = attribute.attnum AND s.relkind = 'S');
    IF NOT fed_by_sequence THEN
        RAISE EXCEPTION 'column % is not fed by a sequence', column_text
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = format('Its default is %s.', coalesce(default_expression, 'not set')),
                  HINT = 'Only serial, bigserial, DEFAULT nextval(...) and identity columns are '
                         'converted; set DEFAULT snowflake_nextval() on other columns with '
                         'ALTER TABLE.';
    END IF;
    IF NOT EXISTS (SELECT FROM pg_constraint
                   WHERE conrelid = target_table AND contype IN ('p', 'u')
                     AND attribute.attnum = ANY (conkey)) THEN
        RAISE EXCEPTION 'column % is not part of a primary key or unique constraint', column_text
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'Add the key first: the conversion is for key columns.';
    END IF;

    -- Every table that references the key is altered too, so the caller must own it.
    SELECT string_agg(DISTINCT format('%s on %s', c.conname, c.conrelid::regclass), ', ')
    INTO blockers
    FROM pg_constraint AS c JOIN pg_class AS r ON r.oid = c.conrelid
    WHERE c.contype = 'f' AND c.confrelid = target_table AND c.conparentid = 0
      AND attribute.attnum = ANY (c.confkey) AND NOT pg_has_role(r.relowner, 'USAGE');
    IF blockers IS NOT NULL THEN
        RAISE EXCEPTION 'must be owner of the tables whose foreign keys reference %', column_text
            USING ERRCODE = 'insufficient_privilege',
                  DETAIL = format('Referencing: %s.', blockers),
                  HINT = 'Run the conversion as a role that owns all of them.';
    END IF;
    -- From here on nothing may change under the checks: the tables are locked as the widening
    -- will lock them anyway, rather than upgraded from a weaker lock later.
    EXECUTE format('LOCK TABLE %s IN ACCESS EXCLUSIVE MODE', concat_ws(', ', target_table::text, (
        SELECT string_agg(DISTINCT
                          coalesce(pg_partition_root(c.conrelid), c.conrelid)::regclass::text, ', ')
        FROM pg_constraint AS c
        WHERE c.contype = 'f' AND c.confrelid = target_table AND c.conparentid = 0
          AND c.conrelid <> target_table AND attribute.attnum = ANY (c.confkey))));

    -- Old keys must stay below every id the generator can issue from now on.
    EXECUTE format('SELECT min(%1$I), max(%1$I) FROM %2$s', target_column, target_table)
        INTO lowest_key, highest_key;
    EXECUTE format('SELECT %I.snowflake_min_id(pg_catalog.now())', extension_schema)
        INTO lowest_new_id;
    IF lowest_key < 0 THEN
        RAISE EXCEPTION 'column % holds negative keys, down to %', column_text, lowest_key
            USING ERRCODE = 'numeric_value_out_of_range',
                  DETAIL = 'Snowflake ids are never negative; keys are kept as they are.',
                  HINT = 'Give the rows with negative keys new keys first.';
    END IF;
    IF highest_key >= lowest_new_id THEN
        RAISE EXCEPTION 'column % holds keys up to %, which new Snowflake ids could repeat',
                        column_text, highest_key
            USING ERRCODE = 'numeric_value_out_of_range',
                  DETAIL = format('New ids start at %s (snowflake_min_id(now())); every '
                                  'existing key must be below it.', lowest_new_id),
                  HINT = 'Give the rows with such keys new keys first.';
    END IF;

    -- Views and policies that a change of type would break, named at once: on each table whose
    -- column is widened, on the root of its partition tree (which is what is altered) and on
    -- every partition of that tree.
    WITH widened(relation, attname) AS (
        SELECT target_table::oid, target_column WHERE attribute.atttypid <> 'int8'::regtype
        UNION
        SELECT coalesce(pg_partition_root(c.conrelid), c.conrelid), a.attname
        FROM pg_constraint AS c
        CROSS JOIN LATERAL unnest(c.confkey, c.conkey) AS k(referenced, referencing)
        JOIN pg_attribute AS a ON a.attrelid = c.conrelid AND a.attnum = k.referencing
        WHERE c.contype = 'f' AND c.confrelid = target_table AND c.conparentid = 0
          AND k.referenced = attribute.attnum
          AND a.atttypid IN ('int2'::regtype, 'int4'::regtype)),
    members(relation, attname) AS (
        SELECT w.relation, w.attname FROM widened AS w
        UNION
        SELECT t.relid, w.attname FROM widened AS w
        CROSS JOIN LATERAL pg_partition_tree(w.relation) AS t)
    SELECT string_agg(DISTINCT pg_describe_object(dep.classid, dep.objid, 0), ', ')
    INTO blockers
    FROM members AS m
    JOIN pg_attribute AS a ON a.attrelid = m.relation AND a.attname = m.attname
    JOIN pg_depend AS dep ON dep.refclassid = 'pg_class'::regclass AND dep.refobjid = m.relation
                         AND dep.refobjsubid = a.attnum
    WHERE dep.classid IN ('pg_rewrite'::regclass, 'pg_policy'::regclass)
      AND dep.deptype = 'n';
    IF blockers IS NOT NULL THEN
        RAISE EXCEPTION 'cannot widen the key % or the columns that reference it', column_text
            USING ERRCODE = 'dependent_objects_still_exist',
                  DETAIL = format('In the way: %s. Nothing was changed.', blockers),
                  HINT = 'Drop them, convert, then create them again: a view or policy cannot '
                         'follow a column''s change of type.';
    END IF;

    -- The key: its feed, its type, its new default.
    IF attribute.attidentity <> '' THEN
        change := format('identity (%s) removed, and its sequence %s with it',
                         CASE attribute.attidentity WHEN 'a' THEN 'ALWAYS' ELSE 'BY DEFAULT' END,
                         pg_get_serial_sequence(target_table::text, target_column));
        EXECUTE format('ALTER TABLE %s ALTER COLUMN %I DROP IDENTITY', target_table,
                       target_column);
        object := column_text;
        RETURN NEXT;
    ELSE
        owned_sequence := pg_get_serial_sequence(target_table::text, target_column);
        EXECUTE format('ALTER TABLE %s ALTER COLUMN %I DROP DEFAULT', target_table,
                       target_column);
        object := column_text;
        change := format('default %s removed', default_expression);
        RETURN NEXT;
    END IF;
    IF attribute.atttypid <> 'int8'::regtype THEN
        EXECUTE format('ALTER TABLE %s ALTER COLUMN %I TYPE bigint', target_table, target_column);
        object := column_text;
        change := format('%s widened to bigint (the table and its indexes were rewritten)',
                         format_type(attribute.atttypid, NULL));
        RETURN NEXT;
    END IF;
    EXECUTE format('ALTER TABLE %s ALTER COLUMN %I SET DEFAULT %I.snowflake_nextval()',
                   target_table, target_column, extension_schema);
    object := column_text;
    change := 'default set to snowflake_nextval()';
    RETURN NEXT;

    -- A serial's sequence belongs to its column: dropped once nothing else uses it.
    IF owned_sequence IS NOT NULL THEN
        SELECT string_agg(pg_describe_object(classid, objid, objsubid), ', ') INTO blockers
        FROM pg_depend
        WHERE refclassid = 'pg_class'::regclass AND refobjid = owned_sequence AND deptype = 'n';
        object := owned_sequence::text;
        IF blockers IS NULL THEN
            EXECUTE format('DROP SEQUENCE %s', owned_sequence);
            change := 'dropped: it was owned by the column and nothing else used it';
        ELSE
            change := format('kept: still used by %s', blockers);
        END IF;
        RETURN NEXT;
    END IF;
    -- A foreign key declared on a partition is widened through the root of its tree, since a
    -- partition's column must keep its parent's type.
    FOR reference IN
        SELECT coalesce(pg_partition_root(c.conrelid), c.conrelid)::regclass AS relation,
               a.attname, format_type(a.atttypid, NULL) AS old_type,
               string_agg(c.conname::text, ', ' ORDER BY c.conname) AS conname
        FROM pg_constraint AS c
        CROSS JOIN LATERAL unnest(c.confkey, c.conkey) AS k(referenced, referencing)
        JOIN pg_attribute AS a ON a.attrelid = c.conrelid AND a.attnum = k.referencing
        WHERE c.contype = 'f' AND c.confrelid = target_table AND c.conparentid = 0
          AND k.referenced = attribute.attnum
        GROUP BY 1, 2, 3
        ORDER BY 1, 2
    LOOP
        object := format('%s.%I', reference.relation, reference.attname);
        IF reference.old_type IN ('smallint', 'integer') THEN
            EXECUTE format('ALTER TABLE %s ALTER COLUMN %I TYPE bigint', reference.relation,
                           reference.attname);
            change := format('%s widened to bigint (referencing through %s; the table was '
                             'rewritten)', reference.old_type, reference.conname);
        ELSE
            change := format('left as %s (referencing through %s)', reference.old_type,
                             reference.conname);
        END IF;
        RETURN NEXT;
    END LOOP;
END
$convert$;
COMMENT ON FUNCTION snowflake_convert_column(regclass, name) IS
    'Turns a smallint, integer or bigint key fed by a sequence or an identity into bigint DEFAULT snowflake_nextval(), keeping every key and widening the columns that reference it, in the caller''s transaction; returns each change made';
