-- The snowflake extension, from 1.4 to 1.5: snowflake_convert_column() in C.
\echo Use "ALTER EXTENSION snowflake UPDATE TO '1.5'" to load this file. \quit

-- The same function (name, arguments, result columns, SQLSTATEs) with a C driver, so that each
-- table is altered, read and judged as its owner in a security-restricted operation, every path
-- of the key's values is followed, and a table that cannot take a new id is refused before
-- anything changes (doc/design.md "The conversion"). VOLATILE: it alters tables. PARALLEL UNSAFE
-- (the default). CALLED ON NULL INPUT: a NULL argument is refused rather than converting nothing
-- unnoticed. For PUBLIC as before: it converts only tables whose owners the caller acts for, and
-- pins search_path itself.
CREATE OR REPLACE FUNCTION snowflake_convert_column("table" regclass, "column" name)
RETURNS TABLE (object text, change text)
    AS 'MODULE_PATHNAME', 'snowflake_convert_column'
    LANGUAGE C VOLATILE CALLED ON NULL INPUT;
COMMENT ON FUNCTION snowflake_convert_column(regclass, name) IS
    'Turns a smallint, integer or bigint key fed by a sequence or an identity into bigint DEFAULT snowflake_nextval(), keeping every key and widening every column its values reach (foreign keys, partitions, inheritance children, chains of keys), each table altered as its owner, in the caller''s transaction; returns each change made';
