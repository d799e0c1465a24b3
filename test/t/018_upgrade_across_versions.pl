# pg_upgrade from an older PostgreSQL to the one under test, done as doc/operations.md
# "Upgrading PostgreSQL" says: the extension installed for both, the new cluster given the old
# one's shared_preload_libraries and node ids, pg_upgrade, the old cluster's snowflake_mark
# copied into the new data directory before its first start, a start, then ALTER EXTENSION
# UPDATE. The old cluster holds a table keyed by DEFAULT snowflake_nextval() and one converted
# from serial with snowflake_convert_column(), and a second database a table keyed by the
# snowflake type (1.6). Each old cluster is upgraded twice, with default settings and the new
# cluster's clock two minutes behind the old cluster's last id. With the mark carried, generation
# is refused with 58000 until the clock passes it, as after any restart, and the stored keys are
# read all the same, since the data came from another cluster. Without it, into a new cluster
# started once before pg_upgrade with that clock (to check its settings, as operators do), which
# issued no id, the new cluster reads the stored keys before its first id (1.9 trusted the mark
# that the start before wrote, and reissued the old cluster's ids): the keys, further ahead than
# snowflake.key_floor_max_lead, stop generation with 55000, naming the highest key of every
# database, until the clock passes them. No id the new cluster issues is at or below the old
# maximum of its table. The typed table
# keeps its rows, its index serves lookups and JSON writes its ids as strings. The older servers
# are named by SNOWFLAKE_UPGRADE_FROM, their installation prefixes separated by spaces (.ci/run
# names the ready-built ones); the extension must be installed in each. Without it the server
# under test is upgraded to itself (the installation that PATH names, as for every other test).
use strict;
use warnings;
use File::Copy;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;

# undef stands for the installation under test.
my @old_prefixes = split ' ', $ENV{SNOWFLAKE_UPGRADE_FROM} // '';
@old_prefixes = (undef) unless @old_prefixes;
plan skip_all => 'libfaketime is not installed' unless have_libfaketime();

# pg_upgrade writes its logs into the current directory's tree.
chdir $PostgreSQL::Test::Utils::tmp_check;
for my $prefix (@old_prefixes) {
    my $pg_config = defined $prefix ? "$prefix/bin/pg_config" : 'pg_config';
    my ($major) = `"$pg_config" --version` =~ /PostgreSQL (\d+)/
      or BAIL_OUT("$pg_config does not run");
    my $label = "from$major";
    my $old = snowflake_node("${label}_old",
        defined $prefix ? (install_path => $prefix) : (),
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
    # The typed table got the old cluster's last ids: its key is the highest of every database.
    my $typed_max = $old->safe_psql('typed', 'SELECT max(id) FROM items');
    my $orders_max = max_id($old, 'orders');
    my $customers_max = max_id($old, 'customers');
    my $old_max = $orders_max > $customers_max ? $orders_max : $customers_max;
    my $owner = $old->safe_psql('postgres', 'SELECT quote_ident(current_user)');
    # pg_upgrade needs the new cluster's data checksums to match the old one's; 18's initdb turns
    # them on by default, earlier versions' do not.
    my $checksums = $old->safe_psql('postgres', 'SHOW data_checksums');
    $old->stop;

    # A new cluster upgraded from the old one, not started yet; pg_upgrade leaves the old one as
    # it was, so that it can be upgraded again.
    my $upgraded = sub {
        my ($name, $what, $started_before_with_clock) = @_;
        my $new = snowflake_node("${label}_$name", datacenter_id => 5, machine_id => 6,
            init_options => $checksums eq 'on' ? { extra => ['--data-checksums'] }
            : { no_data_checksums => 1 });
        $new->append_conf('postgresql.conf', "fsync = on\n");
        if (defined $started_before_with_clock) {
            start_with_clock($new, $started_before_with_clock);
            $new->safe_psql('postgres', 'SELECT 1');
            $new->stop;
        }
        command_ok(
            [
                'pg_upgrade', '-d', $old->data_dir, '-D', $new->data_dir,
                '-b', $old->config_data('--bindir'), '-B', $new->config_data('--bindir'),
                '-s', $new->host, '-p', $old->port, '-P', $new->port
            ],
            "$what: pg_upgrade succeeds");
        return $new;
    };
    # Inserts into every table once the clock is right, and checks that every new id is above
    # the old maximum of its table.
    my $inserts_above = sub {
        my ($new, $what) = @_;
        $new->safe_psql('postgres', q(
INSERT INTO orders (phase) SELECT 'after' FROM generate_series(1, 5000);
INSERT INTO customers (phase) SELECT 'after' FROM generate_series(1, 2000);
));
        is( $new->safe_psql('postgres',
                "SELECT (SELECT count(*) FROM orders WHERE phase = 'after' AND id <= $old_max) + "
                  . "(SELECT count(*) FROM customers WHERE phase = 'after' AND id <= $old_max)"),
            '0', "$what: no new id, in either table, is at or below the old maximum");
        $new->safe_psql('typed',
            q(INSERT INTO items (phase) SELECT 'after' FROM generate_series(1, 5000)));
        is( $new->safe_psql('typed',
                "SELECT count(*) FROM items WHERE phase = 'after' AND id <= $typed_max"),
            '0', "$what: no new id of the snowflake column is at or below its old maximum");
    };

    # The upgrade steps carry the mark, and the keys are read all the same: pg_upgrade ran.
    my $what = "from $old_version, the mark carried";
    my $clock_file = "$PostgreSQL::Test::Utils::tmp_check/clock_offset_018_${label}_mark";
    my $new = $upgraded->('carried', $what);
    my $mark = $new->data_dir . '/snowflake_mark';
    copy($old->data_dir . '/snowflake_mark', $mark) or die "copy snowflake_mark: $!";
    chmod 0600, $mark or die "chmod $mark: $!";
    set_clock_offset($clock_file, offset_behind($typed_max, 120));
    my $log_offset = -s $new->logfile // 0;
    start_with_clock($new, $clock_file);
    like(error_of($new, "INSERT INTO orders (phase) VALUES ('clock behind')"),
        qr/ERROR:  58000: clock moved backwards by \d+ ms, refusing to generate Snowflake ids/,
        "$what, with the clock two minutes behind: generation is refused as after a restart");
    ok(!$new->log_contains(qr/snowflake mark file "snowflake_mark" not found/, $log_offset),
        "$what: the new cluster starts from the old cluster's mark");
    ok($new->log_contains(qr/the stored keys of \d+ databases were read/, $log_offset),
        "$what: and reads the keys before its first id, since the data came from another cluster");
    set_clock_offset($clock_file, '+0');
    $inserts_above->($new, $what);
    is( $new->safe_psql('postgres',
            "SELECT (SELECT count(*) FROM orders WHERE phase = 'before') || ' ' || "
              . "(SELECT count(*) FROM customers WHERE phase = 'before')"),
        '5000 4000', "$what: every old row is there");
    is($new->safe_psql('typed', $typed_rows), $typed_before,
        "$what: the snowflake column keeps every row, of its type");
    like($new->safe_psql('typed', qq(
SET enable_seqscan = off; EXPLAIN (COSTS OFF) SELECT * FROM items WHERE id = $typed_max)),
        qr/Index Scan using items_pkey on items/, "$what: its index serves a lookup");
    is($new->safe_psql('typed', qq(SELECT row_to_json(i)::text FROM items i WHERE id = $typed_max)),
        qq({"id":"$typed_max","phase":"before"}), "$what: JSON writes its id as a string");
    $new->safe_psql('postgres', 'ALTER EXTENSION snowflake UPDATE');
    is( $new->safe_psql('postgres',
            'SELECT e.extversion = a.default_version FROM pg_extension e '
              . 'JOIN pg_available_extensions a ON a.name = e.extname '
              . "WHERE e.extname = 'snowflake'"),
        't', "$what: ALTER EXTENSION UPDATE reaches the default version");
    $new->stop;

    # pg_upgrade alone, into a cluster started once before with the new host's clock: the new
    # cluster starts without a mark, and the stored keys, two minutes ahead of its clock, are
    # further ahead than snowflake.key_floor_max_lead allows to wait for.
    $what = "from $old_version into a cluster started once before, the mark not carried";
    $clock_file = "$PostgreSQL::Test::Utils::tmp_check/clock_offset_018_${label}_keys";
    set_clock_offset($clock_file, offset_behind($typed_max, 120));
    $new = $upgraded->('keys', $what, $clock_file);
    ok(!-e $new->data_dir . '/snowflake_mark',
        "$what: the start before pg_upgrade issued no id and left no mark file");
    set_clock_offset($clock_file, offset_behind($typed_max, 120));
    $log_offset = -s $new->logfile // 0;
    start_with_clock($new, $clock_file);
    my $error = error_of($new, "INSERT INTO orders (phase) VALUES ('clock behind')");
    like($error, qr/ERROR:  55000: a stored key \d+ ms ahead of the clock stops Snowflake id generation/,
        "$what, with the clock two minutes behind: the stored keys stop generation");
    like($error,
        qr/DETAIL:  .*the highest is key $typed_max of column id of table public\.items \(owner \Q$owner\E\) in database "typed"/,
        "$what: a call in one database names the highest key of all, the snowflake column's in the other");
    my $log = slurp_file($new->logfile, $log_offset);
    for my $key ([ $orders_max, 'orders', 'postgres' ], [ $customers_max, 'customers', 'postgres' ],
        [ $typed_max, 'items', 'typed' ])
    {
        my ($max, $table, $database) = @$key;
        like($log,
            qr/LOG:  snowflake: key $max of column id of table public\.$table \(owner \Q$owner\E\) in database "$database" is \d+ ms ahead of the clock, beyond snowflake\.key_floor_max_lead \(60000 ms\); it stops generation/,
            "$what: the highest key of $table is logged by name");
    }
    is($new->safe_psql('postgres', "SELECT count(*) FROM orders WHERE phase <> 'before'"),
        '0', "$what: nothing was issued while the keys stop generation");
    # Once the clock has passed the keys, generation resumes by itself.
    set_clock_offset($clock_file, '+0');
    $inserts_above->($new, $what);
    $new->stop;
}

done_testing();
