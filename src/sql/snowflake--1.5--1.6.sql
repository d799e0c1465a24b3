-- The snowflake extension, from 1.5 to 1.6: the snowflake type, a bigint that JSON writes as a
-- string.
\echo Use "ALTER EXTENSION snowflake UPDATE TO '1.6'" to load this file. \quit

-- The snowflake type ----------------------------------------------------------------------------
-- A bigint in storage, on the wire and in every comparison, that PostgreSQL's JSON functions write
-- as a string, so that an id arrives exact in JavaScript. It has no operators or operator classes
-- of its own: its cast to bigint is implicit and binary, so PostgreSQL compares, sorts, hashes and
-- indexes it with bigint's own (doc/design.md "The snowflake type" gives the reasons for this and
-- for each cast). Its functions are IMMUTABLE, STRICT and PARALLEL SAFE.

CREATE TYPE snowflake;

CREATE FUNCTION snowflake_in(cstring) RETURNS snowflake
    AS 'MODULE_PATHNAME', 'snowflake_in' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION snowflake_out(snowflake) RETURNS cstring
    AS 'MODULE_PATHNAME', 'snowflake_out' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION snowflake_recv(internal) RETURNS snowflake
    AS 'MODULE_PATHNAME', 'snowflake_recv' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION snowflake_send(snowflake) RETURNS bytea
    AS 'MODULE_PATHNAME', 'snowflake_send' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE TYPE snowflake (
    INPUT = snowflake_in,
    OUTPUT = snowflake_out,
    RECEIVE = snowflake_recv,
    SEND = snowflake_send,
    INTERNALLENGTH = 8,
    PASSEDBYVALUE,
    ALIGNMENT = double,
    STORAGE = plain,
    CATEGORY = 'N'
);
COMMENT ON TYPE snowflake IS
    'A Snowflake id: stored, sent and compared as a bigint, written as a string in JSON so that no client rounds it';
COMMENT ON FUNCTION snowflake_in(cstring) IS
    'Reads a snowflake value from decimal digits; a negative, too large or malformed one is refused';
COMMENT ON FUNCTION snowflake_out(snowflake) IS 'Writes a snowflake value as decimal digits';
COMMENT ON FUNCTION snowflake_recv(internal) IS
    'Reads a snowflake value in bigint''s binary form; a negative one is refused';
COMMENT ON FUNCTION snowflake_send(snowflake) IS
    'Writes a snowflake value in bigint''s binary form';

-- Casts: into the type checked (no id is negative), out of it free. bigint arrives on assignment
-- (DEFAULT snowflake_nextval(), INSERT of a bigint), integer and smallint implicitly (a literal
-- such as 0 in COALESCE(id, 0)); the type becomes a bigint implicitly, so every function taking a
-- bigint id takes it, and a numeric, integer or smallint on assignment, as bigint does; the
-- floating-point types only when asked (an index expression such as id::double precision).
CREATE FUNCTION snowflake(bigint) RETURNS snowflake
    AS 'MODULE_PATHNAME', 'snowflake_from_bigint' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION snowflake(integer) RETURNS snowflake
    AS 'MODULE_PATHNAME', 'snowflake_from_integer' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION snowflake(smallint) RETURNS snowflake
    AS 'MODULE_PATHNAME', 'snowflake_from_smallint' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION snowflake(numeric) RETURNS snowflake
    AS 'MODULE_PATHNAME', 'snowflake_from_numeric' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION snowflake_to_numeric(snowflake) RETURNS numeric
    AS 'MODULE_PATHNAME', 'snowflake_to_numeric' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION snowflake_to_integer(snowflake) RETURNS integer
    AS 'MODULE_PATHNAME', 'snowflake_to_integer' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION snowflake_to_smallint(snowflake) RETURNS smallint
    AS 'MODULE_PATHNAME', 'snowflake_to_smallint' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION snowflake_to_double(snowflake) RETURNS double precision
    AS 'MODULE_PATHNAME', 'snowflake_to_double' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION snowflake_to_real(snowflake) RETURNS real
    AS 'MODULE_PATHNAME', 'snowflake_to_real' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION snowflake(bigint) IS
    'A bigint as a snowflake value; a negative one is refused (22003)';
COMMENT ON FUNCTION snowflake(integer) IS
    'An integer as a snowflake value; a negative one is refused (22003)';
COMMENT ON FUNCTION snowflake(smallint) IS
    'A smallint as a snowflake value; a negative one is refused (22003)';
COMMENT ON FUNCTION snowflake(numeric) IS
    'A numeric rounded to a snowflake value; a negative or too large one is refused (22003)';
COMMENT ON FUNCTION snowflake_to_numeric(snowflake) IS
    'A snowflake value as a numeric (the cast to numeric)';
COMMENT ON FUNCTION snowflake_to_integer(snowflake) IS
    'A snowflake value as an integer; one above 2147483647 is refused (22003), as bigint''s is';
COMMENT ON FUNCTION snowflake_to_smallint(snowflake) IS
    'A snowflake value as a smallint; one above 32767 is refused (22003), as bigint''s is';
COMMENT ON FUNCTION snowflake_to_double(snowflake) IS
    'A snowflake value as a double precision, rounded to 53 bits as bigint''s is';
COMMENT ON FUNCTION snowflake_to_real(snowflake) IS
    'A snowflake value as a real, rounded to 24 bits as bigint''s is';

CREATE CAST (bigint AS snowflake) WITH FUNCTION snowflake(bigint) AS ASSIGNMENT;
CREATE CAST (integer AS snowflake) WITH FUNCTION snowflake(integer) AS IMPLICIT;
CREATE CAST (smallint AS snowflake) WITH FUNCTION snowflake(smallint) AS IMPLICIT;
CREATE CAST (numeric AS snowflake) WITH FUNCTION snowflake(numeric) AS ASSIGNMENT;
CREATE CAST (snowflake AS bigint) WITHOUT FUNCTION AS IMPLICIT;
CREATE CAST (snowflake AS numeric) WITH FUNCTION snowflake_to_numeric(snowflake) AS ASSIGNMENT;
CREATE CAST (snowflake AS integer) WITH FUNCTION snowflake_to_integer(snowflake) AS ASSIGNMENT;
CREATE CAST (snowflake AS smallint) WITH FUNCTION snowflake_to_smallint(snowflake) AS ASSIGNMENT;
CREATE CAST (snowflake AS double precision) WITH FUNCTION snowflake_to_double(snowflake);
CREATE CAST (snowflake AS real) WITH FUNCTION snowflake_to_real(snowflake);
COMMENT ON CAST (bigint AS snowflake) IS
    'On assignment: DEFAULT snowflake_nextval() and a bigint stored into a snowflake column';
COMMENT ON CAST (integer AS snowflake) IS 'Implicit, so that a literal such as 0 goes with an id';
COMMENT ON CAST (smallint AS snowflake) IS 'Implicit, as from integer';
COMMENT ON CAST (numeric AS snowflake) IS 'On assignment, as from numeric to bigint';
COMMENT ON CAST (snowflake AS bigint) IS
    'Implicit and free: every function and operator of bigint takes a snowflake value';
COMMENT ON CAST (snowflake AS numeric) IS 'On assignment, as from bigint to numeric';
COMMENT ON CAST (snowflake AS integer) IS
    'On assignment, as from bigint to integer (ON UPDATE CASCADE to an integer foreign key)';
COMMENT ON CAST (snowflake AS smallint) IS 'On assignment, as from bigint to smallint';
COMMENT ON CAST (snowflake AS double precision) IS
    'Explicit only: an id has more digits than a double precision keeps';
COMMENT ON CAST (snowflake AS real) IS
    'Explicit only: an id has more digits than a real keeps';

-- Converting a key to the snowflake type ---------------------------------------------------------
-- The conversion of 1.5 with the type to convert to: bigint (what the two-argument call does) or
-- snowflake, which also takes a bigint key that already holds Snowflake ids (DEFAULT
-- snowflake_nextval()) and changes it and every column its values reach to the type; PostgreSQL
-- rewrites each such table, since the cast checks every value (doc/design.md "The conversion").
-- VOLATILE, PARALLEL UNSAFE, CALLED ON NULL INPUT and for PUBLIC, as the two-argument call.
CREATE FUNCTION snowflake_convert_column("table" regclass, "column" name, "type" regtype)
RETURNS TABLE (object text, change text)
    AS 'MODULE_PATHNAME', 'snowflake_convert_column_to_type'
    LANGUAGE C VOLATILE CALLED ON NULL INPUT;
COMMENT ON FUNCTION snowflake_convert_column(regclass, name, regtype) IS
    'Converts a key to the type, bigint or snowflake: a smallint, integer or bigint key fed by a sequence or an identity, or (to snowflake) a bigint key with DEFAULT snowflake_nextval(), with every column its values reach (foreign keys, partitions, inheritance children, chains of keys), each table altered as its owner, in the caller''s transaction; returns each change made, and which tables were rewritten';
