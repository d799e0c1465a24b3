# pg_upgrade from an older PostgreSQL to the one under test, done as doc/operations.md
# "Upgrading PostgreSQL" says: the extension installed for both, the new cluster given the old
# one's shared_preload_libraries and node ids, pg_upgrade, a start, then ALTER EXTENSION UPDATE.
# The old cluster holds a table keyed by DEFAULT snowflake_nextval() and one converted from serial
# with snowflake_convert_column(), and a second database a table keyed by the snowflake type (1.6);
# the new cluster's clock is two minutes behind the old cluster's last id (within
# snowflake.key_floor_max_lead, set to five minutes), and no id it issues is at or below the old
# maximum. The typed table keeps its rows, its index serves lookups and JSON writes its ids as
# strings. The older servers are named by SNOWFLAKE_UPGRADE_FROM, their installation
# prefixes separated by spaces (.ci/run names the ready-built ones); the extension must be
# installed in each. Without it the test is skipped.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;

my @old_prefixes = split ' ', $ENV{SNOWFLAKE_UPGRADE_FROM} // '';
plan skip_all => 'no older PostgreSQL named in SNOWFLAKE_UPGRADE_FROM' unless @old_prefixes;
plan skip_all => 'libfaketime is not installed' unless have_libfaketime();

# pg_upgrade writes its logs into the current directory's tree.
chdir $PostgreSQL::Test::Utils::tmp_check;
for my $prefix (@old_prefixes) {
    my ($major) = `"$prefix/bin/pg_config" --version` =~ /PostgreSQL (\d+)/
      or BAIL_OUT("SNOWFLAKE_UPGRADE_FROM: $prefix/bin/pg_config does not run");
    my $label = "from$major";
    my $old = snowflake_node("${label}_old", install_path => $prefix,
        init_options => { force_initdb => 1 }, datacenter_id => 5, machine_id => 6);
    $old->append_conf('postgresql.conf', "fsync = on\n");
    $old->start;
    my $old_version = $old->safe_psql('postgres', 'SHOW server_version');
    # The conversion came in 1.3: the extension is updated after the upgrade.
    $old->safe_psql('postgres', q(
CREATE EXTENSION snowflake VERSION '1.3';
CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), phase text NOT NULL);
CREATE TABLE customers (id serial PRIMARY KEY, phase text NOT NULL);
INSERT INTO customers (phase) SELECT 'before' FROM generate_series(1, 2000);
SELECT count(*) FROM snowflake_convert_column('customers', 'id');
INSERT INTO customers (phase) SELECT 'before' FROM generate_series(1, 2000);
INSERT INTO orders (phase) SELECT 'before' FROM generate_series(1, 5000);
));
    $old->safe_psql('postgres', 'CREATE DATABASE typed');
    $old->safe_psql('typed', q(
CREATE EXTENSION snowflake;
CREATE TABLE items (id snowflake PRIMARY KEY DEFAULT snowflake_nextval(), phase text NOT NULL);
INSERT INTO items (phase) SELECT 'before' FROM generate_series(1, 5000);
));
    my $typed_rows = q(SELECT count(*) || ' ' || md5(string_agg(id::text, ',' ORDER BY id))
FROM items WHERE phase = 'before' AND pg_typeof(id) = 'snowflake'::regtype);
    my $typed_before = $old->safe_psql('typed', $typed_rows);
    my $typed_max = $old->safe_psql('typed', 'SELECT max(id) FROM items');
    my $old_max = $old->safe_psql('postgres',
        'SELECT greatest((SELECT max(id) FROM orders), (SELECT max(id) FROM customers))');
    # pg_upgrade needs the new cluster's data checksums to match the old one's; 18's initdb turns
    # them on by default, earlier versions' do not.
    my $checksums = $old->safe_psql('postgres', 'SHOW data_checksums');
    $old->stop;

    my $new = snowflake_node("${label}_new", datacenter_id => 5, machine_id => 6,
        init_options => $checksums eq 'on' ? { extra => ['--data-checksums'] }
        : { no_data_checksums => 1 });
    # Keys two minutes ahead of the clock hold generation back only within the bound.
    $new->append_conf('postgresql.conf', "fsync = on\nsnowflake.key_floor_max_lead = '5min'\n");
    command_ok(
        [
            'pg_upgrade', '-d', $old->data_dir, '-D', $new->data_dir,
            '-b', $old->config_data('--bindir'), '-B', $new->config_data('--bindir'),
            '-s', $new->host, '-p', $old->port, '-P', $new->port
        ],
        "pg_upgrade from $old_version");

    my $clock_file = "$PostgreSQL::Test::Utils::tmp_check/clock_offset_018_$label";
    set_clock_offset($clock_file, '-120');
    start_with_clock($new, $clock_file);
    like(error_of($new, "INSERT INTO orders (phase) VALUES ('clock behind')"),
        qr/ERROR:  55000: a stored key holds Snowflake id generation back/,
        "from $old_version, with the clock behind the old keys: generation is refused");
    like(error_of($new, "INSERT INTO items (phase) VALUES ('clock behind')", 'typed'),
        qr/ERROR:  55000: a stored key holds .*\n.*key $typed_max of column id of table public\.items in database "typed"/,
        "from $old_version: the keys of the snowflake column hold it back too");
    set_clock_offset($clock_file, '+0');
    $new->safe_psql('postgres', q(
INSERT INTO orders (phase) SELECT 'after' FROM generate_series(1, 5000);
INSERT INTO customers (phase) SELECT 'after' FROM generate_series(1, 2000);
));
    is( $new->safe_psql('postgres',
            "SELECT (SELECT count(*) FROM orders WHERE phase = 'after' AND id <= $old_max) + "
              . "(SELECT count(*) FROM customers WHERE phase = 'after' AND id <= $old_max)"),
        '0', "from $old_version: no new id, in either table, is at or below the old maximum");
    is( $new->safe_psql('postgres',
            "SELECT (SELECT count(*) FROM orders WHERE phase = 'before') || ' ' || "
              . "(SELECT count(*) FROM customers WHERE phase = 'before')"),
        '5000 4000', "from $old_version: every old row is there");
    $new->safe_psql('typed', q(INSERT INTO items (phase) SELECT 'after' FROM generate_series(1, 5000)));
    is($new->safe_psql('typed', qq(SELECT count(*) FROM items WHERE phase = 'after' AND id <= $typed_max)),
        '0', "from $old_version: no new id of the snowflake column is at or below its old maximum");
    is($new->safe_psql('typed', $typed_rows), $typed_before,
        "from $old_version: the snowflake column keeps every row, of its type");
    like($new->safe_psql('typed', qq(
SET enable_seqscan = off; EXPLAIN (COSTS OFF) SELECT * FROM items WHERE id = $typed_max)),
        qr/Index Scan using items_pkey on items/, "from $old_version: its index serves a lookup");
    is($new->safe_psql('typed', qq(SELECT row_to_json(i)::text FROM items i WHERE id = $typed_max)),
        qq({"id":"$typed_max","phase":"before"}), "from $old_version: JSON writes its id as a string");

    $new->safe_psql('postgres', 'ALTER EXTENSION snowflake UPDATE');
    is( $new->safe_psql('postgres',
            'SELECT e.extversion = a.default_version FROM pg_extension e '
              . 'JOIN pg_available_extensions a ON a.name = e.extname '
              . "WHERE e.extname = 'snowflake'"),
        't', "from $old_version: ALTER EXTENSION UPDATE reaches the default version");
    $new->stop;
}

done_testing();
