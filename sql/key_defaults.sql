-- The warning of version 1.12 when ALTER TABLE takes snowflake_nextval() away from a column's
-- default: it names the column and the way back, and the statement still runs.
CREATE EXTENSION IF NOT EXISTS snowflake;
CREATE SCHEMA key_defaults;
SET search_path = key_defaults, public;

-- A converted bigserial, then the statements of a framework's migration that puts a sequence
-- back (Django's change of an AutoField to a BigAutoField).
CREATE TABLE app_order (id bigserial PRIMARY KEY, name text);
SELECT count(*) FROM snowflake_convert_column('app_order', 'id');
INSERT INTO app_order (name) VALUES ('first');
ALTER TABLE app_order ALTER COLUMN id TYPE bigint USING id::bigint;
DROP SEQUENCE IF EXISTS app_order_id_seq CASCADE;
CREATE SEQUENCE app_order_id_seq;
ALTER TABLE app_order ALTER COLUMN id SET DEFAULT nextval('app_order_id_seq');
SELECT setval('app_order_id_seq', max(id)) > 0 AS moved FROM app_order;
INSERT INTO app_order (name) VALUES ('from the sequence');
-- The hint's step: the conversion checks the sequence's key and gives the column ids again.
SELECT count(*) FROM snowflake_convert_column('app_order', 'id');
SELECT pg_get_expr(adbin, adrelid) FROM pg_attrdef WHERE adrelid = 'app_order'::regclass;

-- A dropped default: the hint is ALTER TABLE, since the conversion takes only a sequence's column.
ALTER TABLE app_order ALTER COLUMN id DROP DEFAULT;
ALTER TABLE app_order ALTER COLUMN id SET DEFAULT snowflake_nextval();

-- No warning while the default still calls it, in whatever expression, nor for another column.
ALTER TABLE app_order ALTER COLUMN id SET DEFAULT (snowflake_nextval() + 0),
    ALTER COLUMN name SET DEFAULT 'none';
ALTER TABLE app_order ALTER COLUMN name DROP DEFAULT;
ALTER TABLE app_order ALTER COLUMN id DROP DEFAULT, ALTER COLUMN id SET DEFAULT snowflake_nextval();

-- A function of the same name in another schema is not the generator.
CREATE FUNCTION key_defaults.snowflake_nextval() RETURNS bigint LANGUAGE sql AS 'SELECT 1::bigint';
ALTER TABLE app_order ALTER COLUMN id SET DEFAULT key_defaults.snowflake_nextval();
ALTER TABLE app_order ALTER COLUMN id SET DEFAULT public.snowflake_nextval();
DROP FUNCTION key_defaults.snowflake_nextval();

-- A statement that fails warns of nothing, and leaves the default.
ALTER TABLE app_order ALTER COLUMN id SET DEFAULT 'not a number';
SELECT pg_get_expr(adbin, adrelid) FROM pg_attrdef WHERE adrelid = 'app_order'::regclass;

-- A key of the snowflake type, a partitioned table (one warning, for the table named) and a name
-- that needs quotes.
CREATE TABLE "Order's" ("Key" snowflake DEFAULT snowflake_nextval() PRIMARY KEY);
ALTER TABLE "Order's" ALTER COLUMN "Key" SET DEFAULT 5;
CREATE TABLE events (id bigint DEFAULT snowflake_nextval(), at date) PARTITION BY RANGE (id);
CREATE TABLE events_low PARTITION OF events FOR VALUES FROM (0) TO (1000);
ALTER TABLE events ALTER COLUMN id DROP DEFAULT;
SELECT count(*) AS defaults_left FROM pg_attrdef WHERE adrelid IN ('events'::regclass,
    'events_low'::regclass);

RESET search_path;
DROP SCHEMA key_defaults CASCADE;
