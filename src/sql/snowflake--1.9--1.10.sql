-- The snowflake extension, from 1.9 to 1.10: the configuration table of time partitions lives
-- beside logical replication. A publication that covers it (FOR ALL TABLES, FOR TABLES IN SCHEMA)
-- no longer makes every DROP in the database fail, a subscriber skips the rows it receives, and a
-- subscription in binary mode can copy them (doc/reference.md "Logical replication").
\echo Use "ALTER EXTENSION snowflake UPDATE TO '1.10'" to load this file. \quit

-- Every column identifies a row: a publication that covers the table (FOR ALL TABLES, FOR TABLES
-- IN SCHEMA) then lets the table's rows be updated and deleted, which a DROP of any table would
-- otherwise fail on. The unique index cannot serve: it is partial. The extension itself removes
-- rows outside the executor, which no publication can fail (doc/design.md "Time partitions").
ALTER TABLE snowflake_partitioned_tables REPLICA IDENTITY FULL;

-- C: a row that a logical replication worker applies is skipped, so that a subscriber keeps its
-- own setups and never maintains a table it only receives. It fires only where
-- session_replication_role is replica, as in those workers. Not for PUBLIC: it is this table's
-- trigger, and refuses to be any other's.
CREATE FUNCTION snowflake_keep_setups_local() RETURNS trigger
    AS 'MODULE_PATHNAME', 'snowflake_keep_setups_local' LANGUAGE C;
REVOKE EXECUTE ON FUNCTION snowflake_keep_setups_local() FROM PUBLIC;
COMMENT ON FUNCTION snowflake_keep_setups_local() IS
    'Trigger of snowflake_partitioned_tables: skips every row that a logical replication worker inserts, updates or deletes, so that a subscriber keeps its own setups';
CREATE TRIGGER snowflake_keep_setups_local
    BEFORE INSERT OR UPDATE OR DELETE ON snowflake_partitioned_tables
    FOR EACH ROW EXECUTE FUNCTION snowflake_keep_setups_local();
ALTER TABLE snowflake_partitioned_tables ENABLE REPLICA TRIGGER snowflake_keep_setups_local;

-- The binary form of the type of the table's parent column, so that a subscription in binary
-- mode can copy the table: the OID, which reads back as no table, as a bare number does.
CREATE FUNCTION snowflake_partitioned_table_recv(internal) RETURNS snowflake_partitioned_table
    AS 'MODULE_PATHNAME', 'snowflake_partitioned_table_recv' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION snowflake_partitioned_table_send(snowflake_partitioned_table) RETURNS bytea
    AS 'MODULE_PATHNAME', 'snowflake_partitioned_table_send' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
ALTER TYPE snowflake_partitioned_table SET (RECEIVE = snowflake_partitioned_table_recv,
                                           SEND = snowflake_partitioned_table_send);
COMMENT ON FUNCTION snowflake_partitioned_table_recv(internal) IS
    'Reads the binary form, an OID, as no table (OID 0): an OID from another server or a binary COPY may be any table here';
COMMENT ON FUNCTION snowflake_partitioned_table_send(snowflake_partitioned_table) IS
    'Writes the binary form, the OID, as regclass does';

-- C: the bound below which every id this server issued belongs to a transaction whose end is
-- visible, for readers that follow a table by id. VOLATILE: it moves with every transaction.
-- PARALLEL RESTRICTED: it must see the leader's own claim. For PUBLIC: it reveals one id, no row.
CREATE FUNCTION snowflake_settled_bound() RETURNS bigint
    AS 'MODULE_PATHNAME', 'snowflake_settled_bound' LANGUAGE C VOLATILE PARALLEL RESTRICTED;
COMMENT ON FUNCTION snowflake_settled_bound() IS
    'Every id below it that this server issued belongs to a transaction that has ended, visibly to the next snapshot: read a table by id below it, in the next statement';

-- C: the bound and the WAL insert position read after it, for a reader on a standby, which waits
-- until it has replayed past the position before it reads below the bound.
CREATE FUNCTION snowflake_settled_bound_lsn(OUT bound bigint, OUT lsn pg_lsn)
    AS 'MODULE_PATHNAME', 'snowflake_settled_bound_lsn' LANGUAGE C VOLATILE PARALLEL RESTRICTED;
COMMENT ON FUNCTION snowflake_settled_bound_lsn() IS
    'The settled bound and the WAL position after it: a standby that has replayed past lsn shows every transaction below bound as ended';

-- C: the claims that hold the settled bound back, one row each. For PUBLIC, as
-- pg_stat_activity is: the lowest id is shown only where pg_stat_activity shows the session's
-- detail (a superuser, pg_read_all_stats, the session's own role).
CREATE FUNCTION snowflake_settled_claims(OUT pid integer, OUT role oid, OUT prepared_xid xid,
                                         OUT lowest_id bigint)
    RETURNS SETOF record
    AS 'MODULE_PATHNAME', 'snowflake_settled_claims' LANGUAGE C VOLATILE PARALLEL RESTRICTED;
COMMENT ON FUNCTION snowflake_settled_claims() IS
    'The claims that hold the settled bound back: a backend''s (pid, role) or a prepared transaction''s (xid), and the lowest id it may hold';

-- Who holds readers back, oldest first, with what pg_stat_activity and pg_prepared_xacts tell of
-- each. Names are resolved when the view is created, as snowflake_partition_reach's are.
CREATE VIEW snowflake_settled_holders AS
SELECT c.pid, COALESCE(a.usename, p.owner) AS role,
       COALESCE(a.datname, p.database) AS database, p.gid, COALESCE(a.xact_start, p.prepared) AS since,
       pg_catalog.now() OPERATOR(pg_catalog.-) COALESCE(a.xact_start, p.prepared) AS age,
       c.lowest_id
FROM snowflake_settled_claims() AS c
LEFT JOIN pg_catalog.pg_stat_activity AS a ON a.pid OPERATOR(pg_catalog.=) c.pid
LEFT JOIN pg_catalog.pg_prepared_xacts AS p ON p.transaction OPERATOR(pg_catalog.=) c.prepared_xid
ORDER BY c.lowest_id;
GRANT SELECT ON snowflake_settled_holders TO PUBLIC;
COMMENT ON VIEW snowflake_settled_holders IS
    'The transactions that hold the settled bound back, with their role, database, start and the lowest id they may hold';

-- The one-statement form of the reading pattern: PL/pgSQL takes the bound, then reads the rows
-- with a query of its own, whose snapshot READ COMMITTED takes after the bound (VOLATILE, so
-- that each query takes a new one). SECURITY INVOKER (the default): the caller reads her table
-- with her own rights and policies. table_row is a NULL of the table's row type, which names the table
-- and types the result.
CREATE FUNCTION snowflake_settled_rows(table_row anyelement, after_id bigint, max_rows integer,
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
    EXECUTE format('SELECT %I.snowflake_settled_bound()', extension_schema) INTO bound;
    RETURN QUERY EXECUTE format('SELECT * FROM %s WHERE %I >= $1 AND %I < $2 ORDER BY %I LIMIT $3',
                                target, key_column, key_column, key_column)
        USING after_id, bound, max_rows;
END
$rows$;
COMMENT ON FUNCTION snowflake_settled_rows(anyelement, bigint, integer, name) IS
    'The rows of a table from after_id on and below the settled bound, in id order, at most max_rows: the next after_id is the last id returned plus one';

-- snowflake_info() gains the settled bound and its age: how far the bound's time is behind the
-- clock while a transaction holds it back, zero while none does. Added at the end, so that the
-- columns before keep their positions.
ALTER TYPE snowflake_info ADD ATTRIBUTE settled_bound bigint,
                          ADD ATTRIBUTE settled_bound_age interval;
