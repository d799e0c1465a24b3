# A database converted with snowflake_convert_column() survives what its users run next: logical
# replication of the converted tables goes on (the subscriber converted first), and pg_dump with
# pg_restore, in plain and custom formats, into a fresh server restores every key, the foreign keys
# and the default, and new rows there get fresh ids. A server whose node id is unset refuses the
# conversion and changes nothing.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;

my $schema = q(
CREATE EXTENSION snowflake;
CREATE TABLE customers (id serial PRIMARY KEY, name text NOT NULL);
CREATE TABLE orders (id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                     customer_id integer NOT NULL REFERENCES customers (id));
CREATE TABLE order_lines (id bigserial PRIMARY KEY,
                          order_id integer NOT NULL REFERENCES orders (id), quantity integer);
);
my $source = snowflake_node('source', allows_streaming => 'logical', machine_id => 1);
$source->start;
$source->safe_psql('postgres', $schema);
$source->safe_psql('postgres', q(
INSERT INTO customers (name) SELECT 'customer ' || g FROM generate_series(1, 2000) g;
INSERT INTO orders (customer_id) SELECT 1 + g % 2000 FROM generate_series(1, 10000) g;
INSERT INTO order_lines (order_id, quantity) SELECT 1 + g % 10000, g FROM generate_series(1, 30000) g;
CREATE PUBLICATION shop FOR TABLE customers, orders, order_lines;
));

my $subscriber = snowflake_node('subscriber', machine_id => 2);
$subscriber->start;
$subscriber->safe_psql('postgres', $schema);
my $source_connection = 'host=' . $source->host . ' port=' . $source->port . ' dbname=postgres';
$subscriber->safe_psql('postgres',
    "CREATE SUBSCRIPTION shop CONNECTION '$source_connection' PUBLICATION shop");
$subscriber->wait_for_subscription_sync($source, 'shop');

# What must be equal wherever the data goes: every key and every reference.
my $fingerprint = q(
SELECT (SELECT count(*) || ' ' || md5(string_agg(id::text, ',' ORDER BY id)) FROM customers) || ' ' ||
       (SELECT count(*) || ' ' || md5(string_agg(id || ':' || customer_id, ',' ORDER BY id)) FROM orders) || ' ' ||
       (SELECT count(*) || ' ' || md5(string_agg(id || ':' || order_id, ',' ORDER BY id)) FROM order_lines));
my $before = $source->safe_psql('postgres', $fingerprint);
is($subscriber->safe_psql('postgres', $fingerprint), $before, 'the subscriber has every row');

# With a node id unset, the conversion is refused before anything changes.
set_and_reload($subscriber, 'snowflake.machine_id', '-1');
my $error = error_of($subscriber, "SELECT * FROM snowflake_convert_column('customers', 'id')");
like($error, qr/ERROR:  55000: snowflake.machine_id is not set/,
    'with the machine id unset, the conversion is refused (55000)');
is($subscriber->safe_psql('postgres',
        "SELECT format_type(atttypid, NULL) FROM pg_attribute "
        . "WHERE attrelid = 'customers'::regclass AND attname = 'id'"),
    'integer', 'and nothing was changed');
set_and_reload($subscriber, 'snowflake.machine_id', '2');

# The subscriber's columns are widened first, so that it can take the source's new ids.
my $convert_all = q(
SELECT count(*) FROM snowflake_convert_column('customers', 'id');
SELECT count(*) FROM snowflake_convert_column('orders', 'id');
);
$subscriber->safe_psql('postgres', $convert_all);
$source->safe_psql('postgres', $convert_all);
is($source->safe_psql('postgres', $fingerprint), $before,
    'the conversion keeps every key and every reference');
$source->safe_psql('postgres', q(
INSERT INTO customers (name) SELECT 'new customer ' || g FROM generate_series(1, 500) g;
INSERT INTO orders (customer_id) SELECT id FROM customers WHERE name LIKE 'new%';
INSERT INTO order_lines (order_id, quantity) SELECT id, 1 FROM orders WHERE id > 10000;
));
$source->wait_for_catchup('shop');
my $after = $source->safe_psql('postgres', $fingerprint);
is($subscriber->safe_psql('postgres', $fingerprint), $after,
    'logical replication carries the new Snowflake keys of the converted tables');
is($subscriber->safe_psql('postgres',
        "SELECT count(*) FROM orders WHERE id > snowflake_min_id('2020-01-01') "
        . 'AND snowflake_machine_id(id) = 1'),
    '500', "the replicated new keys are the source's Snowflake ids");

# pg_dump and pg_restore of the converted database into a fresh server, in both formats.
my $restored = snowflake_node('restored', machine_id => 3);
$restored->start;
my $tmp = $PostgreSQL::Test::Utils::tmp_check;
$source->command_ok(
    ['pg_dump', '--no-publications', '-Fp', '-f', "$tmp/shop.sql", '-d', $source_connection],
    'pg_dump, plain format');
$source->command_ok(
    ['pg_dump', '--no-publications', '-Fc', '-f', "$tmp/shop.dump", '-d', $source_connection],
    'pg_dump, custom format');
$restored->safe_psql('postgres', 'CREATE DATABASE from_plain');
$restored->safe_psql('postgres', 'CREATE DATABASE from_custom');
$restored->command_ok(
    ['psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $restored->connstr('from_plain'), '-f',
        "$tmp/shop.sql"],
    'the plain dump restores without an error');
$restored->command_ok(
    ['pg_restore', '--exit-on-error', '-d', $restored->connstr('from_custom'), "$tmp/shop.dump"],
    'the custom dump restores without an error');
for my $database ('from_plain', 'from_custom') {
    is($restored->safe_psql($database, $fingerprint), $after,
        "$database: every key and every reference is restored");
    is($restored->safe_psql($database,
            "SELECT string_agg(attrelid::regclass || '.' || attname || ' ' "
            . "|| format_type(atttypid, NULL) || ' ' || pg_get_expr(adbin, adrelid), ', ' "
            . 'ORDER BY attrelid::regclass::text) FROM pg_attribute '
            . 'JOIN pg_attrdef ON (adrelid, adnum) = (attrelid, attnum) '
            . "WHERE attname = 'id' AND attrelid IN ('customers'::regclass, 'orders'::regclass)"),
        'customers.id bigint snowflake_nextval(), orders.id bigint snowflake_nextval()',
        "$database: the keys are bigint DEFAULT snowflake_nextval()");
    my $max = max_id($restored, 'orders', $database);
    $restored->safe_psql($database,
        'INSERT INTO orders (customer_id) SELECT id FROM customers ORDER BY id LIMIT 100');
    is($restored->safe_psql($database,
            "SELECT count(*) FROM orders WHERE id > $max AND snowflake_machine_id(id) = 3"),
        '100', "$database: new rows get fresh ids of the restored server");
    is($restored->safe_psql($database,
            'SELECT count(*) FROM pg_constraint WHERE contype = \'f\''),
        '2', "$database: both foreign keys are restored");
}

done_testing();
