-- snowflake_convert_column(table, column, type) (version 1.6): a key, and every column its values
-- reach, converted to bigint (as the two-argument call) or to the snowflake type, from a serial or
-- identity key or from a bigint key that already holds Snowflake ids; each table altered as its
-- owner; every refusal changes nothing. Ids in messages change with the clock: \d{19} is masked.
CREATE EXTENSION IF NOT EXISTS snowflake;
-- The tables in a schema of their own, dropped at the end with everything that uses the type.
CREATE SCHEMA ct;
SET search_path = ct, public;

-- A column's type, default and identity.
CREATE FUNCTION pg_temp.shape(relation regclass, column_name name) RETURNS text
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT format_type(a.atttypid, a.atttypmod) || ' ' ||
           coalesce(pg_get_expr(d.adbin, d.adrelid), 'no default') ||
           CASE a.attidentity WHEN 'a' THEN ' identity always'
                              WHEN 'd' THEN ' identity by default' ELSE '' END
    FROM pg_attribute a LEFT JOIN pg_attrdef d ON (d.adrelid, d.adnum) = (a.attrelid, a.attnum)
    WHERE a.attrelid = relation AND a.attname = column_name
$$;

-- Runs a statement that must fail and shows its SQLSTATE, message, detail and hint.
CREATE FUNCTION pg_temp.refusal(statement text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    detail text;
    hint text;
BEGIN
    EXECUTE statement;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS detail = PG_EXCEPTION_DETAIL, hint = PG_EXCEPTION_HINT;
    RETURN regexp_replace(
        concat_ws(E'\n', SQLSTATE || ': ' || SQLERRM, nullif(detail, ''), nullif(hint, '')),
        '\d{19}', '<id>', 'g');
END;
$$;

-- The storage of each table and index, to see which ones a conversion rewrote.
-- By name: a rebuilt index is a new object of the same name.
CREATE TEMP TABLE storage_before (relation text, filenode oid);
CREATE FUNCTION pg_temp.remember_storage(relations text[]) RETURNS void
LANGUAGE sql AS $$
    DELETE FROM storage_before;
    INSERT INTO storage_before SELECT r, pg_relation_filenode(r::regclass) FROM unnest(relations) AS r;
$$;
CREATE FUNCTION pg_temp.rewritten() RETURNS TABLE (relation text, rewritten boolean)
LANGUAGE sql AS $$
    SELECT relation, pg_relation_filenode(relation::regclass) <> filenode FROM storage_before
    ORDER BY 1
$$;

-- A serial key to snowflake, with an integer and a bigint foreign key: every column becomes
-- snowflake, every table and its indexes are rewritten, the sequence goes, the keys stay.
CREATE TABLE t_orders (id serial PRIMARY KEY, note text);
CREATE TABLE t_order_lines (id bigserial PRIMARY KEY,
                            order_id integer NOT NULL REFERENCES t_orders (id));
CREATE TABLE t_invoices (id bigserial PRIMARY KEY, order_id bigint REFERENCES t_orders (id));
INSERT INTO t_orders (note) SELECT 'old ' || g FROM generate_series(1, 100) g;
INSERT INTO t_order_lines (order_id) SELECT id FROM t_orders;
INSERT INTO t_invoices (order_id) SELECT id FROM t_orders WHERE id % 2 = 0;
SELECT pg_temp.remember_storage('{t_orders, t_orders_pkey, t_order_lines, t_invoices}');
SELECT * FROM snowflake_convert_column('t_orders', 'id', 'snowflake');
SELECT * FROM pg_temp.rewritten();
SELECT pg_temp.shape('t_orders', 'id') AS key, pg_temp.shape('t_order_lines', 'order_id') AS lines,
       pg_temp.shape('t_invoices', 'order_id') AS invoices,
       to_regclass('t_orders_id_seq') IS NULL AS sequence_dropped;
SELECT count(*), min(id), max(id) FROM t_orders;
-- JSON writes the ids as strings; a new row gets a Snowflake id; the foreign keys still hold.
SELECT row_to_json(o) FROM t_orders AS o WHERE id = 7;
SELECT json_build_object('order_id', order_id) FROM t_order_lines WHERE order_id = 7;
INSERT INTO t_orders (note) VALUES ('new')
    RETURNING id > snowflake_min_id(now() - interval '1 minute') AS snowflake_id,
              regexp_replace(row_to_json(t_orders)::text, '\d{19}', '<id>') AS json;
INSERT INTO t_order_lines (order_id) SELECT id FROM t_orders WHERE note = 'new';
SELECT pg_temp.refusal($$INSERT INTO t_invoices (order_id) VALUES (424242)$$);
SELECT pg_temp.refusal($$INSERT INTO t_orders VALUES (-1, 'negative')$$);

-- A bigint key that already holds Snowflake ids (DEFAULT snowflake_nextval()) is retyped: its
-- default stays, its ids stay, and a domain over bigint on its paths is left as it is.
CREATE DOMAIN t_account_ref AS bigint;
CREATE TABLE t_accounts (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), name text);
CREATE TABLE t_sessions (account_id bigint NOT NULL REFERENCES t_accounts (id));
-- An index expression that casts the column to a floating-point type is rebuilt on the type.
CREATE INDEX t_sessions_as_float ON t_sessions ((account_id::double precision));
CREATE TABLE t_audits (account t_account_ref REFERENCES t_accounts (id));
INSERT INTO t_accounts (name) VALUES ('a'), ('b');
INSERT INTO t_sessions SELECT id FROM t_accounts;
INSERT INTO t_audits SELECT id FROM t_accounts;
CREATE TEMP TABLE accounts_before AS SELECT id, name FROM t_accounts;
SELECT pg_temp.remember_storage('{t_accounts, t_accounts_pkey, t_sessions, t_audits}');
SELECT * FROM snowflake_convert_column('t_accounts', 'id', 'snowflake');
SELECT * FROM pg_temp.rewritten();
SELECT pg_temp.shape('t_accounts', 'id') AS key, pg_temp.shape('t_sessions', 'account_id') AS sessions,
       pg_temp.shape('t_audits', 'account') AS audits;
SELECT count(*) AS unchanged_ids FROM t_accounts JOIN accounts_before USING (id, name);
SELECT pg_get_indexdef('t_sessions_as_float'::regclass) ~ 'account_id\)::double precision'
    AS float_index_kept;
INSERT INTO t_accounts (name) VALUES ('c')
    RETURNING id > (SELECT max(id) FROM accounts_before) AS newer,
              pg_typeof(id), regexp_replace(json_build_object('id', id)::text, '\d{19}', '<id>');
INSERT INTO t_sessions SELECT id FROM t_accounts WHERE name = 'c';
INSERT INTO t_audits SELECT id FROM t_accounts WHERE name = 'c';
-- Again: the key is snowflake already, nothing is left to change, nothing is rewritten.
SELECT pg_temp.remember_storage('{t_accounts, t_sessions}');
SELECT * FROM snowflake_convert_column('t_accounts', 'id', 'snowflake');
SELECT * FROM pg_temp.rewritten();
-- A snowflake key with bigint columns referencing it: only they change.
CREATE TABLE t_devices (id snowflake PRIMARY KEY DEFAULT snowflake_nextval());
CREATE TABLE t_readings (device_id bigint REFERENCES t_devices (id));
INSERT INTO t_devices DEFAULT VALUES;
INSERT INTO t_readings SELECT id FROM t_devices;
SELECT * FROM snowflake_convert_column('t_devices', 'id', 'snowflake');
SELECT pg_temp.shape('t_readings', 'device_id');
-- The two-argument call and 'bigint' still refuse such keys: they are converted already.
SELECT pg_temp.refusal($$SELECT * FROM snowflake_convert_column('t_devices', 'id')$$);
CREATE TABLE t_fed (id bigint PRIMARY KEY DEFAULT snowflake_nextval());
SELECT pg_temp.refusal($$SELECT * FROM snowflake_convert_column('t_fed', 'id', 'bigint')$$);
-- 'bigint' converts as the two-argument call does.
CREATE TABLE t_tickets (id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY);
CREATE TABLE t_ticket_notes (ticket_id smallint REFERENCES t_tickets (id));
SELECT * FROM snowflake_convert_column('t_tickets', 'id', 'bigint');
SELECT pg_temp.shape('t_tickets', 'id') AS key, pg_temp.shape('t_ticket_notes', 'ticket_id') AS notes;

-- Every path: a chain of keys, an inheritance child with a key of its own referenced, and a
-- partitioned table with a foreign key to one of its partitions; identity ALWAYS on the way.
CREATE TABLE t_users (id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY);
CREATE TABLE t_profiles (user_id integer PRIMARY KEY REFERENCES t_users (id));
CREATE TABLE t_posts (id bigserial PRIMARY KEY, profile_id bigint REFERENCES t_profiles (user_id));
INSERT INTO t_users DEFAULT VALUES;
INSERT INTO t_profiles SELECT id FROM t_users;
INSERT INTO t_posts (profile_id) SELECT user_id FROM t_profiles;
SELECT * FROM snowflake_convert_column('t_users', 'id', 'snowflake');
SELECT pg_temp.shape('t_users', 'id') AS users, pg_temp.shape('t_profiles', 'user_id') AS profiles,
       pg_temp.shape('t_posts', 'profile_id') AS posts;
WITH u AS (INSERT INTO t_users DEFAULT VALUES RETURNING id),
     p AS (INSERT INTO t_profiles SELECT id FROM u RETURNING user_id)
INSERT INTO t_posts (profile_id) SELECT user_id FROM p RETURNING profile_id > 2147483647 AS big;
CREATE TABLE t_vehicles (id serial PRIMARY KEY);
CREATE TABLE t_trucks (payload integer) INHERITS (t_vehicles);
ALTER TABLE t_trucks ADD PRIMARY KEY (id);
CREATE TABLE t_trips (truck_id integer REFERENCES t_trucks (id));
INSERT INTO t_trucks (payload) VALUES (10);
INSERT INTO t_trips SELECT id FROM t_trucks;
SELECT * FROM snowflake_convert_column('t_vehicles', 'id', 'snowflake');
SELECT pg_temp.shape('t_trucks', 'id') AS trucks, pg_temp.shape('t_trips', 'truck_id') AS trips;
INSERT INTO t_trucks (payload) VALUES (20);
INSERT INTO t_trips SELECT max(id) FROM t_trucks;
CREATE TABLE t_shipments (id bigserial, region integer NOT NULL, PRIMARY KEY (id, region))
    PARTITION BY LIST (region);
CREATE TABLE t_shipments_eu PARTITION OF t_shipments FOR VALUES IN (1);
CREATE TABLE t_shipments_us PARTITION OF t_shipments FOR VALUES IN (2);
ALTER TABLE t_shipments_eu ADD UNIQUE (id);
CREATE TABLE t_labels (shipment_id bigint REFERENCES t_shipments_eu (id));
INSERT INTO t_shipments (region) VALUES (1), (2);
INSERT INTO t_labels VALUES (1);
SELECT * FROM snowflake_convert_column('t_shipments', 'id', 'snowflake');
SELECT pg_temp.shape('t_shipments_eu', 'id') AS eu, pg_temp.shape('t_shipments_us', 'id') AS us,
       pg_temp.shape('t_labels', 'shipment_id') AS labels;
INSERT INTO t_shipments (region) VALUES (1);
INSERT INTO t_labels SELECT max(id) FROM t_shipments_eu;
SELECT regexp_replace(json_agg(shipment_id ORDER BY shipment_id)::text, '\d{19}', '<id>') AS labels
FROM t_labels;

-- Refusals, each before anything changes: the third argument, a negative value in a column on
-- the paths (the key's, an inheritance child's, a foreign key's that is NOT VALID), a partition
-- key column, and what PostgreSQL cannot carry through a change of type (a view on a bigint
-- column, which the conversion to bigint leaves alone; a function with a SQL-standard body).
CREATE TABLE t_plain (id serial PRIMARY KEY);
CREATE DOMAIN t_snowflake_domain AS snowflake;
SELECT pg_temp.refusal($$SELECT * FROM snowflake_convert_column('t_plain', 'id', 'integer')$$);
SELECT pg_temp.refusal($$SELECT * FROM snowflake_convert_column('t_plain', 'id', 'text')$$);
SELECT pg_temp.refusal($$SELECT * FROM snowflake_convert_column('t_plain', 'id', 't_snowflake_domain')$$);
SELECT pg_temp.refusal($$SELECT * FROM snowflake_convert_column('t_plain', 'id', '-')$$);
SELECT pg_temp.refusal($$SELECT * FROM snowflake_convert_column('t_plain', 'id', NULL)$$);
SELECT pg_temp.refusal($$SELECT * FROM snowflake_convert_column(NULL, 'id', 'snowflake')$$);
CREATE TABLE t_signed (id bigint PRIMARY KEY DEFAULT snowflake_nextval());
INSERT INTO t_signed VALUES (-3), (1);
SELECT pg_temp.refusal($$SELECT * FROM snowflake_convert_column('t_signed', 'id', 'snowflake')$$);
CREATE TABLE t_parent_keys (id serial PRIMARY KEY);
CREATE TABLE t_child_keys () INHERITS (t_parent_keys);
INSERT INTO t_child_keys VALUES (-7);
SELECT pg_temp.refusal($$SELECT * FROM snowflake_convert_column('t_parent_keys', 'id', 'snowflake')$$);
CREATE TABLE t_loose (id bigserial PRIMARY KEY);
CREATE TABLE t_loose_refs (loose_id bigint);
INSERT INTO t_loose DEFAULT VALUES;
INSERT INTO t_loose_refs VALUES (1), (-42);
ALTER TABLE t_loose_refs ADD FOREIGN KEY (loose_id) REFERENCES t_loose (id) NOT VALID;
SELECT pg_temp.refusal($$SELECT * FROM snowflake_convert_column('t_loose', 'id', 'snowflake')$$);
CREATE TABLE t_ranged (id bigint PRIMARY KEY DEFAULT snowflake_nextval()) PARTITION BY RANGE (id);
CREATE TABLE t_ranged_all PARTITION OF t_ranged FOR VALUES FROM (MINVALUE) TO (MAXVALUE);
SELECT pg_temp.refusal($$SELECT * FROM snowflake_convert_column('t_ranged', 'id', 'snowflake')$$);
CREATE TABLE t_hashed_keys (id bigserial PRIMARY KEY);
CREATE TABLE t_hashed_refs (key_id bigint REFERENCES t_hashed_keys (id)) PARTITION BY HASH (key_id);
CREATE TABLE t_hashed_refs_0 PARTITION OF t_hashed_refs FOR VALUES WITH (MODULUS 1, REMAINDER 0);
SELECT pg_temp.refusal($$SELECT * FROM snowflake_convert_column('t_hashed_keys', 'id', 'snowflake')$$);
CREATE TABLE t_viewed (id bigserial PRIMARY KEY);
CREATE TABLE t_viewed_refs (viewed_id bigint REFERENCES t_viewed (id));
CREATE VIEW t_viewed_refs_view AS SELECT viewed_id FROM t_viewed_refs;
CREATE FUNCTION t_viewed_newest() RETURNS bigint LANGUAGE sql
BEGIN ATOMIC SELECT max(id) FROM t_viewed; END;
SELECT pg_temp.refusal($$SELECT * FROM snowflake_convert_column('t_viewed', 'id', 'snowflake')$$);
SELECT pg_temp.shape('t_plain', 'id') AS plain, pg_temp.shape('t_signed', 'id') AS signed,
       pg_temp.shape('t_parent_keys', 'id') AS parent_keys, pg_temp.shape('t_loose', 'id') AS loose,
       pg_temp.shape('t_loose_refs', 'loose_id') AS loose_refs;
SELECT pg_temp.shape('t_ranged', 'id') AS ranged, pg_temp.shape('t_hashed_refs', 'key_id') AS hashed,
       pg_temp.shape('t_viewed', 'id') AS viewed, pg_temp.shape('t_viewed_refs', 'viewed_id') AS refs;
-- To bigint neither is in the way: the bigint columns keep their type, only the key's default
-- changes, and no table is rewritten.
SELECT * FROM snowflake_convert_column('t_viewed', 'id', 'bigint');
SELECT pg_temp.shape('t_viewed', 'id') AS viewed;
-- A column to widen that a function with a SQL-standard body uses is named up front by the
-- two-argument call too, with the other obstacles, rather than by ALTER TABLE's error.
CREATE TABLE t_counted (id serial PRIMARY KEY);
CREATE FUNCTION t_counted_newest() RETURNS integer LANGUAGE sql
BEGIN ATOMIC SELECT max(id) FROM t_counted; END;
SELECT pg_temp.refusal($$SELECT * FROM snowflake_convert_column('t_counted', 'id')$$);
SELECT pg_temp.shape('t_counted', 'id') AS counted;

-- A table of another role. A superuser converts it as that role: her CHECK constraint, index
-- expression and partial index predicate run as her during the rewrite (so her attempt to make
-- herself a superuser fails: she is not one), and her trigger does not run.
-- A stranger cannot convert it; she can.
CREATE ROLE convert_type_owner;
CREATE ROLE convert_type_stranger;
CREATE SCHEMA owner_space AUTHORIZATION convert_type_owner;
GRANT USAGE ON SCHEMA owner_space TO convert_type_stranger;
SET ROLE convert_type_owner;
CREATE TABLE owner_space.seen (who name, what text);
CREATE FUNCTION owner_space.note(what text) RETURNS boolean
LANGUAGE plpgsql SET search_path = pg_catalog AS $$
BEGIN
    INSERT INTO owner_space.seen VALUES (current_user, what);
    IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        ALTER ROLE convert_type_owner SUPERUSER;
    END IF;
    RETURN true;
END $$;
CREATE FUNCTION owner_space.note_key(bigint) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$SELECT owner_space.note('index expression')$$;
CREATE FUNCTION owner_space.note_now() RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$SELECT owner_space.note('index predicate')$$;
CREATE FUNCTION owner_space.on_write() RETURNS trigger
LANGUAGE plpgsql AS $$BEGIN PERFORM owner_space.note('trigger'); RETURN NEW; END$$;
CREATE TABLE owner_space.items (id serial PRIMARY KEY CHECK (id > 0 AND owner_space.note('check')));
CREATE TABLE owner_space.item_refs (item_id bigint REFERENCES owner_space.items (id));
CREATE INDEX ON owner_space.item_refs ((owner_space.note_key(item_id)));
CREATE INDEX ON owner_space.item_refs (item_id) WHERE owner_space.note_now();
CREATE TRIGGER on_write BEFORE INSERT OR UPDATE ON owner_space.item_refs
    FOR EACH ROW EXECUTE FUNCTION owner_space.on_write();
INSERT INTO owner_space.items DEFAULT VALUES;
INSERT INTO owner_space.item_refs VALUES (1);
CREATE TABLE owner_space.second (id serial PRIMARY KEY);
RESET ROLE;
TRUNCATE owner_space.seen;
SET ROLE convert_type_stranger;
SELECT pg_temp.refusal($$SELECT * FROM snowflake_convert_column('owner_space.items', 'id', 'snowflake')$$);
RESET ROLE;
SELECT * FROM snowflake_convert_column('owner_space.items', 'id', 'snowflake');
SELECT rolsuper FROM pg_roles WHERE rolname = 'convert_type_owner';
SELECT who, what, count(*) > 0 AS ran FROM owner_space.seen GROUP BY 1, 2 ORDER BY 1, 2;
SELECT pg_temp.shape('owner_space.items', 'id') AS items,
       pg_temp.shape('owner_space.item_refs', 'item_id') AS refs;
SET ROLE convert_type_owner;
SELECT * FROM snowflake_convert_column('owner_space.second', 'id', 'snowflake');
INSERT INTO owner_space.second DEFAULT VALUES RETURNING pg_typeof(id);
RESET ROLE;
-- A table on the key's paths of another owner is refused, naming it, before any change.
CREATE TABLE t_lent (id serial PRIMARY KEY);
CREATE TABLE t_borrowed (lent_id bigint REFERENCES t_lent (id));
ALTER TABLE t_borrowed OWNER TO convert_type_stranger;
SELECT pg_temp.refusal($$SELECT * FROM snowflake_convert_column('t_lent', 'id', 'snowflake')$$);
SELECT pg_temp.shape('t_lent', 'id') AS lent, pg_temp.shape('t_borrowed', 'lent_id') AS borrowed;
SET client_min_messages = warning;
DROP TABLE t_borrowed;
DROP SCHEMA owner_space, ct CASCADE;
RESET client_min_messages;
DROP ROLE convert_type_owner, convert_type_stranger;
RESET search_path;
