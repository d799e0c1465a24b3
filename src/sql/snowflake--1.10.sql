-- The snowflake extension, version 1.10, complete: what CREATE EXTENSION snowflake installs. The
-- update scripts from 1.0 (snowflake--1.0--1.1.sql and on) reach the same objects, which the
-- regression test install.sql compares; a change to the extension goes into both.
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

-- Resuming generation after a start without the mark file ---------------------------------------

-- VOLATILE: it changes the generator's state. STRICT: a NULL key releases nothing. Not for
-- PUBLIC: it lets ids equal to a stored key be issued later, which only a superuser (or a role
-- a superuser grants it to) may decide (doc/security.md "The floor from stored keys").
CREATE FUNCTION snowflake_release_key(key bigint) RETURNS void
    AS 'MODULE_PATHNAME', 'snowflake_release_key'
    LANGUAGE C VOLATILE STRICT;
REVOKE EXECUTE ON FUNCTION snowflake_release_key(bigint) FROM PUBLIC;
COMMENT ON FUNCTION snowflake_release_key(bigint) IS
    'After a start without the mark file, lets generation resume that a stored key of this server''s node pair further ahead of the clock than snowflake.key_floor_max_lead stops: key must be the one the refusal names; the release is logged with the role, and the server issues an id equal to that key when its clock reaches it unless the row has another key by then';

-- Checking other servers ----------------------------------------------------------------------

-- VOLATILE: it asks other servers. PARALLEL UNSAFE (the default): it opens connections. CALLED ON
-- NULL INPUT: a NULL argument or an empty list is an error, not a check of nothing. Judged by the
-- fleet guard's rules (doc/reference.md "Peer check"). Not for PUBLIC: it connects out as the
-- server.
CREATE FUNCTION snowflake_check_peers(
    peers text[],
    max_clock_offset_ms integer DEFAULT 10000,
    timeout_ms integer DEFAULT 5000)
RETURNS TABLE (
    peer text,
    datacenter_id integer,
    machine_id integer,
    clock_offset_ms bigint,
    problem text)
    AS 'MODULE_PATHNAME', 'snowflake_check_peers_with_fleet_rules'
    LANGUAGE C VOLATILE CALLED ON NULL INPUT;
REVOKE EXECUTE ON FUNCTION snowflake_check_peers(text[], integer, integer) FROM PUBLIC;
COMMENT ON FUNCTION snowflake_check_peers(text[], integer, integer) IS
    'Connects to each peer (libpq connection strings) at once and reports its node ids, its clock offset from this server, and what is wrong by the fleet guard''s rules: another live server holding this server''s node pair or another peer''s, ids not set, the extension missing or not preloaded, no answer, a clock too far off; this server, recognised by its instance token, and standbys hold no pair. A NULL argument or an empty list is an error';

-- Converting a key ------------------------------------------------------------------------------

-- A C driver, so that each table is altered, read and judged as its owner in a
-- security-restricted operation, every path of the key's values is followed, and a table that
-- cannot take a new id is refused before anything changes (doc/design.md "The conversion").
-- VOLATILE: it alters tables. PARALLEL UNSAFE (the default). CALLED ON NULL INPUT: a NULL argument
-- is refused rather than converting nothing unnoticed. For PUBLIC: it converts only tables whose
-- owners the caller acts for, and pins search_path itself.
CREATE FUNCTION snowflake_convert_column("table" regclass, "column" name)
RETURNS TABLE (object text, change text)
    AS 'MODULE_PATHNAME', 'snowflake_convert_column'
    LANGUAGE C VOLATILE CALLED ON NULL INPUT;
COMMENT ON FUNCTION snowflake_convert_column(regclass, name) IS
    'Turns a smallint, integer or bigint key fed by a sequence or an identity into bigint DEFAULT snowflake_nextval(), keeping every key and widening every column its values reach (foreign keys, partitions, inheritance children, chains of keys), each table altered as its owner, in the caller''s transaction; returns each change made';

-- The fleet guard --------------------------------------------------------------------------------

-- VOLATILE: they read what the fleet guard found last, which changes at every check. Not for
-- PUBLIC: the members are connection strings (passwords masked) of the servers that generate.
CREATE FUNCTION snowflake_fleet_status()
RETURNS TABLE (
    member text,
    self boolean,
    datacenter_id integer,
    machine_id integer,
    clock_offset_ms bigint,
    problem text,
    checked_at timestamptz)
    AS 'MODULE_PATHNAME', 'snowflake_fleet_status'
    LANGUAGE C VOLATILE;
REVOKE EXECUTE ON FUNCTION snowflake_fleet_status() FROM PUBLIC;
COMMENT ON FUNCTION snowflake_fleet_status() IS
    'One row per member of snowflake.fleet as the fleet guard found it at its last check: whether it is this server, its node ids, its clock offset from this server, and what is wrong (no answer, library or ids missing, this server''s node pair or another member''s, a clock too far off)';

CREATE FUNCTION snowflake_fleet_summary(
    OUT checked_at timestamptz,
    OUT members integer,
    OUT members_with_problems integer,
    OUT refusing boolean)
    AS 'MODULE_PATHNAME', 'snowflake_fleet_summary'
    LANGUAGE C VOLATILE;
REVOKE EXECUTE ON FUNCTION snowflake_fleet_summary() FROM PUBLIC;
COMMENT ON FUNCTION snowflake_fleet_summary() IS
    'When the fleet guard last checked snowflake.fleet, how many members it has and how many have a problem, and whether snowflake_nextval() refuses because another live member holds this server''s node pair';

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

-- Time partitions (version 1.7) ------------------------------------------------------------------
-- A table range-partitioned on its Snowflake key, kept ahead of the clock and trimmed by a
-- retention (doc/reference.md "Time partitions", doc/design.md "Time partitions").

-- The table a row of snowflake_partitioned_tables sets up (version 1.8): an OID, read and written
-- by name as regclass is, except that its input reads a bare number (what pg_dump writes for a
-- table dropped before the dump) or a name this database has no table of as no table, so that a
-- restore never applies a setup to a relation that merely has that OID (doc/design.md "Time
-- partitions"). Casts to oid and regclass are implicit and binary, so it compares, indexes and
-- passes as they do; from regclass it comes on assignment.
CREATE TYPE snowflake_partitioned_table;

CREATE FUNCTION snowflake_partitioned_table_in(cstring) RETURNS snowflake_partitioned_table
    AS 'MODULE_PATHNAME', 'snowflake_partitioned_table_in' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION snowflake_partitioned_table_out(snowflake_partitioned_table) RETURNS cstring
    AS 'MODULE_PATHNAME', 'snowflake_partitioned_table_out' LANGUAGE C STABLE STRICT PARALLEL SAFE;

-- The binary form (version 1.10), so that a subscription in binary mode can copy the table: the
-- OID, which reads back as no table, as a bare number does.
CREATE FUNCTION snowflake_partitioned_table_recv(internal) RETURNS snowflake_partitioned_table
    AS 'MODULE_PATHNAME', 'snowflake_partitioned_table_recv' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION snowflake_partitioned_table_send(snowflake_partitioned_table) RETURNS bytea
    AS 'MODULE_PATHNAME', 'snowflake_partitioned_table_send' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE TYPE snowflake_partitioned_table (
    INPUT = snowflake_partitioned_table_in,
    OUTPUT = snowflake_partitioned_table_out,
    RECEIVE = snowflake_partitioned_table_recv,
    SEND = snowflake_partitioned_table_send,
    LIKE = pg_catalog.regclass
);
COMMENT ON TYPE snowflake_partitioned_table IS
    'The table a row of snowflake_partitioned_tables sets up: an OID written as the table''s name, whose input reads a bare number or the name of no table as no table, so that a restore never re-aims a setup at another table';
COMMENT ON FUNCTION snowflake_partitioned_table_in(cstring) IS
    'Reads a table''s name as regclass does; a bare number, - or the name of no table is read as no table (OID 0)';
COMMENT ON FUNCTION snowflake_partitioned_table_out(snowflake_partitioned_table) IS
    'Writes the table''s name as regclass does';
COMMENT ON FUNCTION snowflake_partitioned_table_recv(internal) IS
    'Reads the binary form, an OID, as no table (OID 0): an OID from another server or a binary COPY may be any table here';
COMMENT ON FUNCTION snowflake_partitioned_table_send(snowflake_partitioned_table) IS
    'Writes the binary form, the OID, as regclass does';

CREATE CAST (snowflake_partitioned_table AS oid) WITHOUT FUNCTION AS IMPLICIT;
CREATE CAST (snowflake_partitioned_table AS regclass) WITHOUT FUNCTION AS IMPLICIT;
CREATE CAST (regclass AS snowflake_partitioned_table) WITHOUT FUNCTION AS ASSIGNMENT;
COMMENT ON CAST (snowflake_partitioned_table AS oid) IS
    'Implicit and binary, so that the column compares and is indexed as an oid';
COMMENT ON CAST (snowflake_partitioned_table AS regclass) IS
    'Implicit and binary, so that the column passes where a regclass is taken';
COMMENT ON CAST (regclass AS snowflake_partitioned_table) IS
    'On assignment, as the functions write a row: a regclass is a table that exists';

-- One row per table set up, written only by snowflake_partition_table() (as this table's owner);
-- pg_dump and pg_restore keep its rows, since it is a configuration table of the extension.
CREATE TABLE snowflake_partitioned_tables (
    parent snowflake_partitioned_table NOT NULL,
    every interval NOT NULL,
    ahead integer NOT NULL CHECK (ahead BETWEEN 0 AND 1000),
    retain interval,
    time_zone text NOT NULL,
    drop_expired boolean NOT NULL DEFAULT false
);
COMMENT ON TABLE snowflake_partitioned_tables IS
    'The tables set up for time partitions by snowflake_partition_table(): the interval, how many partitions to keep ahead of the current one, the retention, the time zone of the boundaries and whether expired partitions are dropped after they are detached';
-- One row per table. Unique where parent is a table only: a restore whose trigger is disabled
-- (pg_restore --disable-triggers) keeps each row it reads as no table (OID 0) rather than failing
-- the whole table's restore on the second; maintenance then removes them.
CREATE UNIQUE INDEX snowflake_partitioned_tables_parent_key ON snowflake_partitioned_tables (parent)
    WHERE parent::pg_catalog.oid OPERATOR(pg_catalog.<>) 0::pg_catalog.oid;
SELECT pg_catalog.pg_extension_config_dump('snowflake_partitioned_tables', '');
GRANT SELECT ON snowflake_partitioned_tables TO PUBLIC;
-- Every column identifies a row (version 1.10): a publication that covers the table (FOR ALL
-- TABLES, FOR TABLES IN SCHEMA) then lets the extension update and delete its rows, which a DROP
-- of any table would otherwise fail on. The unique index cannot serve: it is partial.
ALTER TABLE snowflake_partitioned_tables REPLICA IDENTITY FULL;

-- C: a row whose parent the type's input read as no table is left out, with a warning that names
-- its setup, rather than kept pointing at no table (doc/design.md "Time partitions"). Not for
-- PUBLIC: it is this table's trigger, and refuses to be any other's.
CREATE FUNCTION snowflake_leave_out_setup_without_table() RETURNS trigger
    AS 'MODULE_PATHNAME', 'snowflake_leave_out_setup_without_table' LANGUAGE C;
REVOKE EXECUTE ON FUNCTION snowflake_leave_out_setup_without_table() FROM PUBLIC;
COMMENT ON FUNCTION snowflake_leave_out_setup_without_table() IS
    'Trigger of snowflake_partitioned_tables: leaves out, with a warning, a row whose table the input read as no table (a dump''s number for a dropped table, or a table the restore left out)';
CREATE TRIGGER snowflake_leave_out_setup_without_table
    BEFORE INSERT OR UPDATE ON snowflake_partitioned_tables
    FOR EACH ROW EXECUTE FUNCTION snowflake_leave_out_setup_without_table();

-- C: a row that a logical replication worker applies is skipped (version 1.10), so that a
-- subscriber keeps its own setups and never maintains a table it only receives (doc/reference.md
-- "Logical replication"). It fires only where session_replication_role is replica, as in those
-- workers. Not for PUBLIC: it is this table's trigger, and refuses to be any other's.
CREATE FUNCTION snowflake_keep_setups_local() RETURNS trigger
    AS 'MODULE_PATHNAME', 'snowflake_keep_setups_local' LANGUAGE C;
REVOKE EXECUTE ON FUNCTION snowflake_keep_setups_local() FROM PUBLIC;
COMMENT ON FUNCTION snowflake_keep_setups_local() IS
    'Trigger of snowflake_partitioned_tables: skips every row that a logical replication worker inserts, updates or deletes, so that a subscriber keeps its own setups';
CREATE TRIGGER snowflake_keep_setups_local
    BEFORE INSERT OR UPDATE OR DELETE ON snowflake_partitioned_tables
    FOR EACH ROW EXECUTE FUNCTION snowflake_keep_setups_local();
ALTER TABLE snowflake_partitioned_tables ENABLE REPLICA TRIGGER snowflake_keep_setups_local;

-- C: after any DROP, removes the rows whose table is gone, as the configuration table's owner,
-- whoever dropped it, so that no row outlives its table and a dump never holds one. Not for
-- PUBLIC: only the event trigger calls it.
CREATE FUNCTION snowflake_forget_dropped_setups() RETURNS event_trigger
    AS 'MODULE_PATHNAME', 'snowflake_forget_dropped_setups' LANGUAGE C;
REVOKE EXECUTE ON FUNCTION snowflake_forget_dropped_setups() FROM PUBLIC;
COMMENT ON FUNCTION snowflake_forget_dropped_setups() IS
    'Event trigger on sql_drop: removes the rows of snowflake_partitioned_tables whose table is gone';
CREATE EVENT TRIGGER snowflake_forget_dropped_setups ON sql_drop
    EXECUTE FUNCTION snowflake_forget_dropped_setups();
COMMENT ON EVENT TRIGGER snowflake_forget_dropped_setups IS
    'Removes the setup of a table set up for time partitions when the table is dropped';

-- C, so that every statement on the table runs as its owner in a security-restricted operation
-- (doc/design.md "Time partitions"). VOLATILE: it creates, attaches and detaches tables.
-- CALLED ON NULL INPUT: a NULL argument other than retain is refused. For PUBLIC: it acts only on
-- tables whose owners the caller acts for, and pins search_path itself.
CREATE FUNCTION snowflake_partition_table(parent regclass, every interval,
                                          ahead integer DEFAULT 3,
                                          retain interval DEFAULT NULL,
                                          time_zone text DEFAULT 'UTC',
                                          drop_expired boolean DEFAULT false)
RETURNS TABLE (parent regclass, partition text, action text)
    AS 'MODULE_PATHNAME', 'snowflake_partition_table'
    LANGUAGE C VOLATILE CALLED ON NULL INPUT;
COMMENT ON FUNCTION snowflake_partition_table(regclass, interval, integer, interval, text, boolean) IS
    'Sets a table partitioned by range on its bigint or snowflake key up for partitions of one hour, day, week or month aligned in time_zone: adopts the partitions that line up, creates those missing from the oldest key to ahead periods past the current one, and detaches (drop_expired: drops) those older than retain; returns what it did';

-- VOLATILE, CALLED ON NULL INPUT (NULL: every table set up that the caller may maintain) and for
-- PUBLIC, as snowflake_partition_table().
CREATE FUNCTION snowflake_maintain_partitions(parent regclass DEFAULT NULL)
RETURNS TABLE (parent regclass, partition text, action text)
    AS 'MODULE_PATHNAME', 'snowflake_maintain_partitions'
    LANGUAGE C VOLATILE CALLED ON NULL INPUT;
COMMENT ON FUNCTION snowflake_maintain_partitions(regclass) IS
    'Brings a table set up by snowflake_partition_table(), or every such table whose owner the caller acts for, up to its setup: creates the partitions missing up to ahead periods past the current one and detaches (or drops) those older than the retention, never one holding a newer row; idempotent; returns what it did, or nothing to do';

-- For the scheduler (version 1.8): every table set up that the caller may maintain, each in a
-- transaction of its own that commits before the next begins, so that no lock of one table's
-- step outlives that step. C, as snowflake_maintain_partitions(); CALL it on its own, not in a
-- transaction block. It holds an advisory lock of the caller's role for as long as it runs: a
-- second run by the same role meanwhile does nothing (doc/reference.md "Scheduling").
CREATE PROCEDURE snowflake_run_partition_maintenance()
    AS 'MODULE_PATHNAME', 'snowflake_run_partition_maintenance' LANGUAGE C;
COMMENT ON PROCEDURE snowflake_run_partition_maintenance() IS
    'Maintains every table set up for time partitions whose owner the caller acts for, committing after each table, and does nothing while another run of the same role is in progress; reports what it did as notices';

-- The partitions of a table partitioned by range, with their bounds read as maintenance reads
-- them (version 1.8): C, from the catalog alone, without a lock. STABLE: the catalog can change
-- between statements. For PUBLIC: bounds are in pg_class, which every role reads.
CREATE FUNCTION snowflake_partition_ranges(parent regclass)
RETURNS TABLE (partition regclass, lower_id bigint, upper_id bigint, starts timestamptz,
               ends timestamptz, takes_rows boolean)
    AS 'MODULE_PATHNAME', 'snowflake_partition_ranges'
    LANGUAGE C STABLE STRICT;
COMMENT ON FUNCTION snowflake_partition_ranges(regclass) IS
    'The partitions of a table partitioned by range: bounds (NULL for MINVALUE or MAXVALUE, both for a default partition), the time their ids span whole (starts, ends: -infinity and infinity without a bound), and whether a row routed to each finds a table (a sub-partitioned partition does with a default partition or hash partitions for every remainder)';

-- The periods snowflake_partition_table() would make (version 1.8), computed as maintenance
-- computes them, for an interval and a time zone between two times: to foresee a setup's
-- partitions and names, or check its boundaries, without a table. C; STABLE: time zone rules can
-- change between statements. For PUBLIC: it reads no table.
CREATE FUNCTION snowflake_partition_boundaries(every interval, time_zone text, since timestamptz,
                                               until timestamptz)
RETURNS TABLE (starts timestamptz, ends timestamptz, name_suffix text)
    AS 'MODULE_PATHNAME', 'snowflake_partition_boundaries'
    LANGUAGE C STABLE STRICT;
COMMENT ON FUNCTION snowflake_partition_boundaries(interval, text, timestamptz, timestamptz) IS
    'The periods of one hour, day, week or month in time_zone that time partitions would have, from the one that holds since through those that begin before until, within the time of Snowflake ids (2010-11-04 to 2080): their start, their end and the suffix of their partition''s name';

-- How far ahead each table's partitions reach, for monitoring: reaches_until is the end of the
-- unbroken run of partitions that take rows from the one that holds now() (now() itself when none
-- does, so that time_left is zero; infinity, and time_left NULL, when the run ends in MAXVALUE or
-- a default partition), since an insert past the first gap fails however far later ones reach.
CREATE VIEW snowflake_partition_reach AS
SELECT t.parent::pg_catalog.regclass AS parent, t.every, t.ahead, t.retain, t.time_zone,
       t.drop_expired, r.partitions, r.reaches_from, r.reaches_until,
       CASE WHEN pg_catalog.isfinite(r.reaches_until)
            THEN r.reaches_until OPERATOR(pg_catalog.-) pg_catalog.now() END AS time_left
FROM snowflake_partitioned_tables AS t
CROSS JOIN LATERAL (
    WITH RECURSIVE bounds AS (
        SELECT * FROM snowflake_partition_ranges(t.parent)
    ), run AS (
        SELECT b.upper_id, b.ends FROM bounds AS b
        WHERE b.takes_rows AND b.starts OPERATOR(pg_catalog.<=) pg_catalog.now()
          AND b.ends OPERATOR(pg_catalog.>) pg_catalog.now()
        UNION
        SELECT b.upper_id, b.ends FROM bounds AS b
        JOIN run ON b.lower_id OPERATOR(pg_catalog.=) run.upper_id
        WHERE b.takes_rows
    )
    SELECT pg_catalog.count(*) AS partitions, pg_catalog.min(b.starts) AS reaches_from,
           COALESCE((SELECT pg_catalog.max(run.ends) FROM run), pg_catalog.now()) AS reaches_until
    FROM bounds AS b
) AS r
WHERE EXISTS (SELECT FROM pg_catalog.pg_class AS p
              WHERE p.oid OPERATOR(pg_catalog.=) t.parent::pg_catalog.oid);
COMMENT ON VIEW snowflake_partition_reach IS
    'Per table set up by snowflake_partition_table(): its setup, how many partitions it has, the start of the oldest, the end of the unbroken run of partitions that take rows from now on, and the time left before inserts would find no partition (alert well before it reaches zero)';
GRANT SELECT ON snowflake_partition_reach TO PUBLIC;
