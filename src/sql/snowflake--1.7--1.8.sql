-- The snowflake extension, from 1.7 to 1.8: after a start without the mark file, a stored key
-- further ahead of the clock than snowflake.key_floor_max_lead stops generation (it was left out
-- before) until the clock passes it or a superuser releases it with this function.
--
-- What changes for a running server comes with the library, not with this script: once the new
-- library is loaded (a restart), the keys of every database are read by a background worker
-- before the first id after a start without the mark file, and snowflake.key_floor_max_lead is
-- the lead up to which a key holds generation back by itself, beyond which it stops generation
-- (doc/operations.md "Upgrading PostgreSQL").
\echo Use "ALTER EXTENSION snowflake UPDATE TO '1.8'" to load this file. \quit

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

