-- The snowflake extension, from 1.8 to 1.9: min() and max() of the snowflake type keep the type.
\echo Use "ALTER EXTENSION snowflake UPDATE TO '1.9'" to load this file. \quit

-- min() and max() of the type (version 1.9): bigint's aggregates in all but the type, so that
-- max(id) of a snowflake key is written as a string in JSON like the key. The planner hook plans
-- each call as bigint's aggregate over the column (doc/design.md "The snowflake type"), so that a
-- btree on the column answers it; without the library preloaded they read every row.
CREATE FUNCTION snowflake_smaller(snowflake, snowflake) RETURNS snowflake
    AS 'MODULE_PATHNAME', 'snowflake_smaller' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION snowflake_larger(snowflake, snowflake) RETURNS snowflake
    AS 'MODULE_PATHNAME', 'snowflake_larger' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE AGGREGATE min(snowflake) (
    SFUNC = snowflake_smaller,
    STYPE = snowflake,
    COMBINEFUNC = snowflake_smaller,
    PARALLEL = SAFE
);
CREATE AGGREGATE max(snowflake) (
    SFUNC = snowflake_larger,
    STYPE = snowflake,
    COMBINEFUNC = snowflake_larger,
    PARALLEL = SAFE
);
COMMENT ON FUNCTION snowflake_smaller(snowflake, snowflake) IS
    'The smaller of two snowflake values (the transition of min(snowflake))';
COMMENT ON FUNCTION snowflake_larger(snowflake, snowflake) IS
    'The larger of two snowflake values (the transition of max(snowflake))';
COMMENT ON AGGREGATE min(snowflake) IS
    'The smallest snowflake value, of the type (a string in JSON, where bigint''s min() is a number)';
COMMENT ON AGGREGATE max(snowflake) IS
    'The largest snowflake value, of the type (a string in JSON, where bigint''s max() is a number)';
