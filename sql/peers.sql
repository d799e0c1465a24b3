-- snowflake_check_peers() (version 1.1, refusing an empty check since 1.2), the upgrades from 1.0,
-- and a fresh install.
CREATE EXTENSION IF NOT EXISTS snowflake;

-- This server, reached through its own socket, is recognised by its instance token: it holds no
-- pair that collides with its own.
SELECT format('host=%s port=%s dbname=%s',
              split_part(current_setting('unix_socket_directories'), ',', 1),
              current_setting('port'), current_database()) AS self \gset
SELECT datacenter_id, machine_id, abs(clock_offset_ms) < 1000 AS clock_close, problem
FROM snowflake_check_peers(ARRAY[:'self']);
-- Listed twice, it is still one server.
SELECT datacenter_id, machine_id, problem
FROM snowflake_check_peers(ARRAY[:'self', :'self']);
-- A database without the extension, and a server that is not there.
SELECT problem FROM snowflake_check_peers(ARRAY[:'self' || ' dbname=template1']);
SELECT peer, datacenter_id IS NULL AS no_ids, problem
FROM snowflake_check_peers(ARRAY['host=/nonexistent port=1']);
-- No secret is ever shown back: every option libpq marks as secret is masked.
SELECT peer FROM snowflake_check_peers(
    ARRAY['host=/nonexistent port=1 password=secret sslpassword=KeyPass42']);
-- A malformed URI: libpq's parse error would quote the password, so it is not shown.
SELECT * FROM snowflake_check_peers(ARRAY['postgresql://app:p%zzword@127.0.0.1:5802/postgres']);
-- Within the threshold, the clock is no problem.
SELECT count(*) FROM snowflake_check_peers(ARRAY[:'self'], 60000, 5000) WHERE problem LIKE '%clock%';

-- Bad arguments are errors, before any connection is made.
SELECT * FROM snowflake_check_peers(ARRAY['host=x port']);
SELECT * FROM snowflake_check_peers(ARRAY[:'self', NULL]);
SELECT * FROM snowflake_check_peers(ARRAY[:'self'], -1);
SELECT * FROM snowflake_check_peers(ARRAY[:'self'], 10000, 0);
-- A check of nothing would pass unnoticed: a NULL or empty list, or a NULL setting, is an error.
SELECT count(*) FROM snowflake_check_peers(NULL);
SELECT count(*) FROM snowflake_check_peers('{}');
SELECT count(*) FROM snowflake_check_peers(ARRAY[:'self'], NULL);
SELECT count(*) FROM snowflake_check_peers(ARRAY[:'self'], 10000, NULL);

-- Only roles granted it may run it; a role that is not a superuser must use a password.
CREATE ROLE peer_checker;
SET ROLE peer_checker;
SELECT * FROM snowflake_check_peers(ARRAY[:'self']);
RESET ROLE;
GRANT EXECUTE ON FUNCTION snowflake_check_peers(text[], integer, integer) TO peer_checker;
SET ROLE peer_checker;
SELECT problem FROM snowflake_check_peers(ARRAY[:'self']);
RESET ROLE;
REVOKE EXECUTE ON FUNCTION snowflake_check_peers(text[], integer, integer) FROM peer_checker;
DROP ROLE peer_checker;

-- From 1.0 through every version script with ALTER EXTENSION ... UPDATE.
DROP EXTENSION snowflake;
CREATE EXTENSION snowflake VERSION '1.0';
SELECT extversion FROM pg_extension WHERE extname = 'snowflake';
SELECT count(*) AS check_peers_in_1_0 FROM pg_proc WHERE proname = 'snowflake_check_peers';
ALTER EXTENSION snowflake UPDATE TO '1.1';
SELECT extversion FROM pg_extension WHERE extname = 'snowflake';
SELECT p.oid::regprocedure, pg_get_function_result(p.oid), p.proisstrict,
       has_function_privilege('public', p.oid, 'EXECUTE') AS public_exec,
       obj_description(p.oid, 'pg_proc') IS NOT NULL AS commented
FROM pg_proc p WHERE proname = 'snowflake_check_peers';
ALTER EXTENSION snowflake UPDATE TO '1.4';
SELECT extversion FROM pg_extension WHERE extname = 'snowflake';
SELECT p.oid::regprocedure, p.proisstrict,
       has_function_privilege('public', p.oid, 'EXECUTE') AS public_exec,
       obj_description(p.oid, 'pg_proc') LIKE '%empty list is an error' AS commented_1_2
FROM pg_proc p WHERE proname = 'snowflake_check_peers';
SELECT count(*) FROM snowflake_check_peers('{}');
-- Up to 1.4 the check has rules of its own: this server, listed twice, collides with itself.
SELECT problem FROM snowflake_check_peers(ARRAY[:'self', :'self']);
-- 1.5 judges by the fleet guard's rules, and keeps the grants.
GRANT EXECUTE ON FUNCTION snowflake_check_peers(text[], integer, integer) TO PUBLIC;
ALTER EXTENSION snowflake UPDATE TO '1.5';
SELECT p.oid::regprocedure, p.proisstrict,
       has_function_privilege('public', p.oid, 'EXECUTE') AS public_exec,
       obj_description(p.oid, 'pg_proc') LIKE '%fleet guard''s rules%' AS commented_1_5
FROM pg_proc p WHERE proname = 'snowflake_check_peers';
REVOKE EXECUTE ON FUNCTION snowflake_check_peers(text[], integer, integer) FROM PUBLIC;
SELECT problem FROM snowflake_check_peers(ARRAY[:'self', :'self']);
ALTER EXTENSION snowflake UPDATE;
SELECT e.extversion = a.default_version AS at_default_version
FROM pg_extension AS e JOIN pg_available_extensions AS a ON a.name = e.extname
WHERE e.extname = 'snowflake';

-- A fresh install is the default version, with the same objects.
DROP EXTENSION snowflake;
CREATE EXTENSION snowflake;
SELECT e.extversion = a.default_version AS at_default_version
FROM pg_extension AS e JOIN pg_available_extensions AS a ON a.name = e.extname
WHERE e.extname = 'snowflake';
SELECT p.oid::regprocedure, p.proisstrict,
       has_function_privilege('public', p.oid, 'EXECUTE') AS public_exec
FROM pg_proc p WHERE proname = 'snowflake_check_peers';
SELECT snowflake_encode(1700000000000, 7, 13, 4095);
