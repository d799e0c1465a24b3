-- The snowflake extension, version 1.0: generation, decoding, encoding and time-range helpers.
\echo Use "CREATE EXTENSION snowflake" to load this file. \quit

-- Types -----------------------------------------------------------------------------------------

CREATE TYPE snowflake_parts AS (
    created_at timestamptz,
    unix_ms bigint,
    datacenter_id integer,
    machine_id integer,
    sequence integer
);
COMMENT ON TYPE snowflake_parts IS
    'The fields of a Snowflake id: creation instant (ms), Unix ms, datacenter id, machine id, sequence';

CREATE TYPE snowflake_info AS (
    datacenter_id integer,
    machine_id integer,
    epoch timestamptz,
    last_timestamp timestamptz,
    ids_generated bigint,
    sequence_waits bigint,
    clock_rollbacks bigint,
    persisted_mark timestamptz
);
COMMENT ON TYPE snowflake_info IS
    'Settings and generator state of this server, as returned by snowflake_info()';

-- Generation ------------------------------------------------------------------------------------

-- VOLATILE: every call returns a new id. PARALLEL SAFE: workers draw from the same shared state.
CREATE FUNCTION snowflake_nextval() RETURNS bigint
    AS 'MODULE_PATHNAME', 'snowflake_nextval'
    LANGUAGE C VOLATILE PARALLEL SAFE;
COMMENT ON FUNCTION snowflake_nextval() IS
    'A new Snowflake id from this server''s generator: unique and strictly increasing per server';

-- Decoding: IMMUTABLE because an id's fields never change; STRICT so NULL in gives NULL out. ----

CREATE FUNCTION snowflake_decode(id bigint) RETURNS snowflake_parts
    AS 'MODULE_PATHNAME', 'snowflake_decode'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION snowflake_decode(bigint) IS
    'All fields of a Snowflake id as a snowflake_parts row';

CREATE FUNCTION snowflake_timestamp(id bigint) RETURNS timestamptz
    AS 'MODULE_PATHNAME', 'snowflake_timestamp'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION snowflake_timestamp(bigint) IS
    'The instant a Snowflake id was made, to the millisecond';

CREATE FUNCTION snowflake_unix_ms(id bigint) RETURNS bigint
    AS 'MODULE_PATHNAME', 'snowflake_unix_ms'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION snowflake_unix_ms(bigint) IS
    'The timestamp of a Snowflake id in Unix milliseconds';

CREATE FUNCTION snowflake_datacenter_id(id bigint) RETURNS integer
    AS 'MODULE_PATHNAME', 'snowflake_datacenter_id'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION snowflake_datacenter_id(bigint) IS
    'The datacenter id (0-31) of the node that made a Snowflake id';

CREATE FUNCTION snowflake_machine_id(id bigint) RETURNS integer
    AS 'MODULE_PATHNAME', 'snowflake_machine_id'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION snowflake_machine_id(bigint) IS
    'The machine id (0-31) of the node that made a Snowflake id';

CREATE FUNCTION snowflake_sequence(id bigint) RETURNS integer
    AS 'MODULE_PATHNAME', 'snowflake_sequence'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION snowflake_sequence(bigint) IS
    'The per-millisecond sequence number (0-4095) of a Snowflake id';

-- Encoding: IMMUTABLE and STRICT; out-of-range fields raise 22003 instead of wrapping. ----------

CREATE FUNCTION snowflake_encode(unix_ms bigint, datacenter_id integer, machine_id integer,
                                 sequence integer) RETURNS bigint
    AS 'MODULE_PATHNAME', 'snowflake_encode_unix_ms'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION snowflake_encode(bigint, integer, integer, integer) IS
    'The Snowflake id with these fields, the timestamp given in Unix milliseconds';

CREATE FUNCTION snowflake_encode(created_at timestamptz, datacenter_id integer, machine_id integer,
                                 sequence integer) RETURNS bigint
    AS 'MODULE_PATHNAME', 'snowflake_encode_timestamptz'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION snowflake_encode(timestamptz, integer, integer, integer) IS
    'The Snowflake id with these fields; sub-millisecond digits are truncated toward the past';

-- Time-range helpers: IMMUTABLE so the planner folds them into index bounds; they clamp, never fail.

CREATE FUNCTION snowflake_min_id(ts timestamptz) RETURNS bigint
    AS 'MODULE_PATHNAME', 'snowflake_min_id'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION snowflake_min_id(timestamptz) IS
    'The smallest Snowflake id made at or after ts: id >= snowflake_min_id(a) AND id < snowflake_min_id(b) selects [a, b)';

CREATE FUNCTION snowflake_max_id(ts timestamptz) RETURNS bigint
    AS 'MODULE_PATHNAME', 'snowflake_max_id'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION snowflake_max_id(timestamptz) IS
    'The largest Snowflake id made at or before ts';

-- Introspection: VOLATILE because the state moves with every id. -------------------------------

CREATE FUNCTION snowflake_info() RETURNS snowflake_info
    AS 'MODULE_PATHNAME', 'snowflake_info'
    LANGUAGE C VOLATILE PARALLEL SAFE;
COMMENT ON FUNCTION snowflake_info() IS
    'This server''s node ids, epoch, last timestamp used and generator counters';
