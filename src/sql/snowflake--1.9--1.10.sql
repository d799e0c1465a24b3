-- The snowflake extension, from 1.9 to 1.10: the configuration table of time partitions lives
-- beside logical replication. A publication that covers it (FOR ALL TABLES, FOR TABLES IN SCHEMA)
-- no longer makes every DROP in the database fail, and a subscriber skips the rows it receives.
-- The same objects as in the complete install script, which gives their reasons.
\echo Use "ALTER EXTENSION snowflake UPDATE TO '1.10'" to load this file. \quit

ALTER TABLE snowflake_partitioned_tables REPLICA IDENTITY FULL;

CREATE FUNCTION snowflake_keep_setups_local() RETURNS trigger
    AS 'MODULE_PATHNAME', 'snowflake_keep_setups_local' LANGUAGE C;
REVOKE EXECUTE ON FUNCTION snowflake_keep_setups_local() FROM PUBLIC;
COMMENT ON FUNCTION snowflake_keep_setups_local() IS
    'Trigger of snowflake_partitioned_tables: skips every row that a logical replication worker inserts, updates or deletes, so that a subscriber keeps its own setups';
CREATE TRIGGER snowflake_keep_setups_local
    BEFORE INSERT OR UPDATE OR DELETE ON snowflake_partitioned_tables
    FOR EACH ROW EXECUTE FUNCTION snowflake_keep_setups_local();
ALTER TABLE snowflake_partitioned_tables ENABLE REPLICA TRIGGER snowflake_keep_setups_local;
