# Tables keyed by the snowflake type survive what tables go through: inserts routed by DEFAULT
# snowflake_nextval() into a table partitioned by RANGE on the type (bounds from
# snowflake_min_id()) and into a hash-partitioned one; a bigint foreign key referencing a
# snowflake key; binary COPY out and in (the type's binary form is bigint's, and a negative value
# is refused on the way in); logical replication to a second server with the extension, inserts,
# updates and deletes keyed by the type; and pg_dump with pg_restore (custom format) into a fresh
# database, which gets every row, the keys' indexes, the partitions with their bounds and the
# foreign key back.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;

my $schema = q(
CREATE EXTENSION snowflake;
CREATE TABLE items (id snowflake PRIMARY KEY DEFAULT snowflake_nextval(), note text NOT NULL);
CREATE TABLE lines (id bigint PRIMARY KEY DEFAULT snowflake_nextval(),
                    item_id bigint NOT NULL REFERENCES items (id), quantity integer NOT NULL);
CREATE TABLE events (id snowflake PRIMARY KEY DEFAULT snowflake_nextval(), note text NOT NULL)
    PARTITION BY RANGE (id);
CREATE TABLE events_before_2025 PARTITION OF events
    FOR VALUES FROM (MINVALUE) TO (snowflake_min_id('2025-01-01 00:00:00+00'));
CREATE TABLE events_since_2025 PARTITION OF events
    FOR VALUES FROM (snowflake_min_id('2025-01-01 00:00:00+00')) TO (MAXVALUE);
CREATE TABLE shards (id snowflake PRIMARY KEY DEFAULT snowflake_nextval(), note text NOT NULL)
    PARTITION BY HASH (id);
CREATE TABLE shards_0 PARTITION OF shards FOR VALUES WITH (MODULUS 4, REMAINDER 0);
CREATE TABLE shards_1 PARTITION OF shards FOR VALUES WITH (MODULUS 4, REMAINDER 1);
CREATE TABLE shards_2 PARTITION OF shards FOR VALUES WITH (MODULUS 4, REMAINDER 2);
CREATE TABLE shards_3 PARTITION OF shards FOR VALUES WITH (MODULUS 4, REMAINDER 3);
);

my $source = snowflake_node('source', allows_streaming => 'logical', machine_id => 1);
$source->start;
$source->safe_psql('postgres', $schema);
$source->safe_psql('postgres', q(
INSERT INTO items (note) SELECT 'item ' || g FROM generate_series(1, 3000) g;
INSERT INTO lines (item_id, quantity) SELECT id, 1 FROM items;
INSERT INTO events (note) SELECT 'now' FROM generate_series(1, 2000);
INSERT INTO events
    SELECT snowflake_encode('2024-06-01 00:00:00+00'::timestamptz, 1, 1, s), 'by hand, 2024'
    FROM generate_series(0, 99) AS s;
INSERT INTO shards (note) SELECT 'shard' FROM generate_series(1, 2000);
));

# What must be equal wherever the data goes: every key, its type and every row.
my $fingerprint = q(
SELECT string_agg(t || ' ' || n || ' ' || h, ', ' ORDER BY t) FROM (
    SELECT 'items' AS t, count(*) AS n,
        md5(string_agg(id::text || ':' || note || ':' || pg_typeof(id), ',' ORDER BY id)) AS h
    FROM items
    UNION ALL SELECT 'lines', count(*), md5(string_agg(id || ':' || item_id || ':' || quantity, ','
        ORDER BY id)) FROM lines
    UNION ALL SELECT 'events', count(*), md5(string_agg(tableoid::regclass || ':' || id || ':'
        || note || ':' || pg_typeof(id), ',' ORDER BY id)) FROM events
    UNION ALL SELECT 'shards', count(*), md5(string_agg(tableoid::regclass || ':' || id || ':'
        || pg_typeof(id), ',' ORDER BY id)) FROM shards) AS f);

# Routing by the default: the generated ids go after 2025, the hand-made ones before, and the
# hash spreads them over every partition.
is($source->safe_psql('postgres', q(
SELECT string_agg(tableoid::regclass || ' ' || note || ' ' || n, ', ' ORDER BY tableoid::regclass)
FROM (SELECT tableoid, note, count(*) AS n FROM events GROUP BY 1, 2) AS p)),
    'events_before_2025 by hand, 2024 100, events_since_2025 now 2000',
    'DEFAULT snowflake_nextval() routes rows by RANGE on the type');
is($source->safe_psql('postgres', q(
SELECT count(DISTINCT tableoid) || ' ' || count(*) || ' ' || bool_and(
    satisfies_hash_partition('shards'::regclass, 4, substr(tableoid::regclass::text, 8)::integer, id))
FROM shards)),
    '4 2000 true', 'and by HASH on it, each row in the partition its hash names');
like(error_of($source, 'INSERT INTO lines (item_id, quantity) VALUES (1, 1)'),
    qr/ERROR:  23503: insert or update on table "lines" violates foreign key constraint/,
    'the bigint foreign key on the snowflake key is enforced (23503)');

# Binary COPY: out of the snowflake table and into a copy of it, and from a bigint column, whose
# binary form is the same; a negative bigint is refused on the way in.
my $tmp = $PostgreSQL::Test::Utils::tmp_check;
$source->safe_psql('postgres', qq(
COPY items TO '$tmp/items.bin' (FORMAT binary);
CREATE TABLE items_copy (LIKE items INCLUDING ALL);
COPY items_copy FROM '$tmp/items.bin' (FORMAT binary);
CREATE TABLE bigint_ids (id bigint, note text);
INSERT INTO bigint_ids VALUES (9223372036854775807, 'largest'), (0, 'zero');
COPY bigint_ids TO '$tmp/bigint_ids.bin' (FORMAT binary);
COPY items_copy FROM '$tmp/bigint_ids.bin' (FORMAT binary);
));
is($source->safe_psql('postgres', q(
SELECT (SELECT md5(string_agg(id || ':' || note, ',' ORDER BY id)) FROM items) =
       (SELECT md5(string_agg(id || ':' || note, ',' ORDER BY id)) FROM items_copy
        WHERE note LIKE 'item %'))),
    't', 'binary COPY out and in keeps every id');
is($source->safe_psql('postgres',
        "SELECT string_agg(id::text, ' ' ORDER BY id) FROM items_copy WHERE note NOT LIKE 'item %'"),
    '0 9223372036854775807', "a bigint column's binary COPY reads into the type");
$source->safe_psql('postgres',
    qq(COPY (SELECT -1::bigint, 'negative'::text) TO '$tmp/negative.bin' (FORMAT binary)));
like(error_of($source, "COPY items_copy FROM '$tmp/negative.bin' (FORMAT binary)"),
    qr/ERROR:  22003: value -1 is out of range for type snowflake/,
    'a negative value in binary COPY is refused (22003)');
is($source->safe_psql('postgres', 'SELECT count(*) FROM items_copy'), '3002',
    'and nothing of that COPY is kept');

# Logical replication to a server with the extension: the initial copy, then inserts, updates and
# deletes, which the subscriber applies by the snowflake keys.
$source->safe_psql('postgres', q(
CREATE PUBLICATION typed FOR TABLE items, lines, events, shards
    WITH (publish_via_partition_root = true)));
my $subscriber = snowflake_node('subscriber', machine_id => 2);
$subscriber->start;
$subscriber->safe_psql('postgres', $schema);
my $source_connection = 'host=' . $source->host . ' port=' . $source->port . ' dbname=postgres';
$subscriber->safe_psql('postgres',
    "CREATE SUBSCRIPTION typed CONNECTION '$source_connection' PUBLICATION typed");
$subscriber->wait_for_subscription_sync($source, 'typed');
is($subscriber->safe_psql('postgres', $fingerprint), $source->safe_psql('postgres', $fingerprint),
    'the subscriber has every row, keyed by the type');
$source->safe_psql('postgres', q(
INSERT INTO items (note) SELECT 'new item ' || g FROM generate_series(1, 500) g;
INSERT INTO lines (item_id, quantity) SELECT id, 2 FROM items WHERE note LIKE 'new item %';
INSERT INTO events (note) SELECT 'later' FROM generate_series(1, 500);
INSERT INTO shards (note) SELECT 'later' FROM generate_series(1, 500);
UPDATE items SET note = note || ', changed' WHERE id IN (SELECT id FROM items ORDER BY id LIMIT 300);
UPDATE events SET note = 'changed' WHERE id IN (SELECT id FROM events ORDER BY id DESC LIMIT 200);
UPDATE shards SET note = 'changed' WHERE id % 7 = 0;
DELETE FROM lines WHERE item_id IN (SELECT id FROM items ORDER BY id DESC LIMIT 100);
DELETE FROM items WHERE id IN (SELECT id FROM items ORDER BY id DESC LIMIT 100);
DELETE FROM events WHERE note = 'by hand, 2024' AND id % 2 = 0;
DELETE FROM shards WHERE id % 5 = 0;
));
$source->wait_for_catchup('typed');
my $after = $source->safe_psql('postgres', $fingerprint);
is($subscriber->safe_psql('postgres', $fingerprint), $after,
    'inserts, updates and deletes keyed by the type arrive equal');
is($subscriber->safe_psql('postgres', q(
SELECT count(*) FROM items WHERE note LIKE '%, changed' AND snowflake_machine_id(id) = 1)),
    '300', "the updated rows are the source's, by their keys");

# pg_dump and pg_restore, custom format, into a fresh database.
$source->command_ok(
    ['pg_dump', '--no-publications', '-Fc', '-f', "$tmp/typed.dump", '-d', $source_connection],
    'pg_dump, custom format');
$subscriber->safe_psql('postgres', 'CREATE DATABASE restored');
$subscriber->command_ok(
    ['pg_restore', '--exit-on-error', '-d', $subscriber->connstr('restored'), "$tmp/typed.dump"],
    'the dump restores into a fresh database without an error');
is($subscriber->safe_psql('restored', $fingerprint), $after,
    'every row is restored, each in its partition, keyed by the type');
my $structure = q(
SELECT string_agg(d, E'\n' ORDER BY d) FROM (
    SELECT indexrelid::regclass || ' ' || opcname || ' ' || indisunique AS d
    FROM pg_index JOIN pg_opclass ON pg_opclass.oid = indclass[0]
    WHERE indrelid::regclass::text IN ('items', 'events_before_2025', 'events_since_2025', 'shards_0')
    UNION ALL SELECT oid::regclass || ' ' || pg_get_expr(relpartbound, oid) FROM pg_class
    WHERE relispartition
    UNION ALL SELECT conname || ' ' || pg_get_constraintdef(oid) FROM pg_constraint
    WHERE contype = 'f'
    UNION ALL SELECT attrelid::regclass || '.id ' || format_type(atttypid, NULL) || ' '
        || pg_get_expr(adbin, adrelid) FROM pg_attribute
    JOIN pg_attrdef ON (adrelid, adnum) = (attrelid, attnum)
    WHERE attname = 'id' AND attrelid IN ('items'::regclass, 'events'::regclass)) AS s);
my $restored_structure = $subscriber->safe_psql('restored', $structure);
is($restored_structure, $source->safe_psql('postgres', $structure),
    "the keys' indexes, the partitions' bounds, the foreign key and the defaults are restored");
like($restored_structure, qr/^items_pkey int8_ops true$/m,
    "the key's index is of bigint's operator class, the type's default");
my $an_id = $subscriber->safe_psql('restored', 'SELECT id FROM items ORDER BY id LIMIT 1 OFFSET 42');
like($subscriber->safe_psql('restored', qq(
SET enable_seqscan = off; EXPLAIN (COSTS OFF) SELECT * FROM items WHERE id = $an_id)),
    qr/Index Scan using items_pkey on items/, 'the restored key index serves a lookup');
is($subscriber->safe_psql('restored', qq(SELECT row_to_json(i)::text FROM items i WHERE id = $an_id)),
    $source->safe_psql('postgres', qq(SELECT row_to_json(i)::text FROM items i WHERE id = $an_id)),
    'the row reads the same there in JSON');
like($subscriber->safe_psql('restored', qq(SELECT row_to_json(i)::text FROM items i WHERE id = $an_id)),
    qr/^\{"id":"$an_id",/, 'with the id as a string');
$subscriber->safe_psql('restored', q(
INSERT INTO events (note) SELECT 'restored' FROM generate_series(1, 100);
INSERT INTO shards (note) SELECT 'restored' FROM generate_series(1, 100)));
is($subscriber->safe_psql('restored', q(
SELECT (SELECT count(*) FROM events_since_2025 WHERE note = 'restored'
        AND snowflake_machine_id(id) = 2) || ' ' ||
       (SELECT count(DISTINCT tableoid) FROM shards WHERE note = 'restored'))),
    '100 4', "new rows there are routed by the restored server's ids");
like(error_of($subscriber, 'INSERT INTO lines (item_id, quantity) VALUES (1, 1)', 'restored'),
    qr/ERROR:  23503: insert or update on table "lines" violates foreign key constraint/,
    'and the restored foreign key is enforced');

done_testing();
