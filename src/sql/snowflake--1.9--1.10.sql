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
