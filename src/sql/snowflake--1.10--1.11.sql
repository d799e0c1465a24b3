-- The snowflake extension, from 1.10 to 1.11: the library no longer lets a read of the settled
-- bound lower the durable mark or use up every id (CHANGELOG.md "1.11"); that fix is in the
-- library. snowflake_settled_rows() refuses a key column without a unique index of its own.
\echo Use "ALTER EXTENSION snowflake UPDATE TO '1.11'" to load this file. \quit

-- A page ends at its last key and the next begins above it, so a key that several rows share
-- would drop all but the first of them between two pages: a table's key column must have a
-- unique index of its own (not partial). A view or a foreign table has none to check; the docs
-- ask for a unique key there.
CREATE OR REPLACE FUNCTION snowflake_settled_rows(table_row anyelement, after_id bigint, max_rows integer,
                                       key_column name DEFAULT 'id')
RETURNS SETOF anyelement
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $rows$
DECLARE
    -- The extension may have been moved to another schema; its functions are called through it.
    extension_schema CONSTANT name := (
        SELECT n.nspname FROM pg_extension AS e JOIN pg_namespace AS n ON n.oid = e.extnamespace
        WHERE e.extname = 'snowflake');
    target CONSTANT regclass := (
        SELECT c.oid FROM pg_type AS t JOIN pg_class AS c ON c.oid = t.typrelid
        WHERE t.oid = pg_typeof(table_row) AND c.relkind IN ('r', 'p', 'v', 'm', 'f'));
    key_type regtype;
    bound bigint;
BEGIN
    IF target IS NULL OR after_id IS NULL OR max_rows IS NULL OR key_column IS NULL
       OR max_rows < 0 THEN
        RAISE EXCEPTION 'snowflake_settled_rows() needs a table''s row type, a cursor, a page size of 0 or more and a key column'
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Call it as SELECT * FROM snowflake_settled_rows(NULL::outbox, 0, 1000).';
    END IF;
    key_type := (SELECT a.atttypid FROM pg_attribute AS a
                 WHERE a.attrelid = target AND a.attname = key_column AND a.attnum > 0
                   AND NOT a.attisdropped);
    IF key_type IS NULL THEN
        RAISE EXCEPTION 'column "%" of % does not exist', key_column, target
            USING ERRCODE = 'undefined_column',
                  HINT = 'Pass the name of the column that holds the ids as key_column.';
    END IF;
    IF key_type NOT IN ('bigint'::regtype, format('%I.snowflake', extension_schema)::regtype) THEN
        RAISE EXCEPTION 'column "%" of % is of type %, not bigint or snowflake', key_column, target, key_type
            USING ERRCODE = 'datatype_mismatch',
                  HINT = 'Pass the column that holds the ids as key_column.';
    END IF;
    IF (SELECT c.relkind FROM pg_class AS c WHERE c.oid = target) IN ('r', 'p', 'm')
       AND NOT EXISTS (
           SELECT FROM pg_index AS i JOIN pg_attribute AS a
             ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
           WHERE i.indrelid = target AND i.indisunique AND i.indnkeyatts = 1
             AND i.indpred IS NULL AND a.attname = key_column) THEN
        RAISE EXCEPTION 'column "%" of % has no unique index of its own', key_column, target
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = 'A page ends at its last key, and the next begins above it: rows that share a key would be skipped.',
                  HINT = 'Pass a column with a unique index of its own, such as the primary key, or create one.';
    END IF;
    EXECUTE format('SELECT %I.snowflake_settled_bound()', extension_schema) INTO bound;
    RETURN QUERY EXECUTE format('SELECT * FROM %s WHERE %I >= $1 AND %I < $2 ORDER BY %I LIMIT $3',
                                target, key_column, key_column, key_column)
        USING after_id, bound, max_rows;
END
$rows$;
