# pg_upgrade run the usual way, with no step for this extension, keeps ids unique: the new data
# directory has no mark file, and the first snowflake_nextval() in each database raises the
# generator above the keys already stored, even with the clock two minutes behind the old
# cluster's last id (within snowflake.key_floor_max_lead, set to five minutes here), and after a
# restart before every database was used. A removed mark file is covered the same way; a key
# written by hand far in the future is left out and logged by name. The
# extension, created at 1.0 before the upgrade, then goes through every update script and ends
# equal to a fresh install.
use strict;
use warnings;
use FindBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;

plan skip_all => 'libfaketime is not installed' unless have_libfaketime();

my $clock_file = "$PostgreSQL::Test::Utils::tmp_check/clock_offset_014";
my $old = snowflake_node('old', datacenter_id => 3, machine_id => 4);
$old->append_conf('postgresql.conf', "fsync = on\n");
start_with_clock($old, $clock_file);
$old->safe_psql('postgres', q(
CREATE DATABASE shop;
CREATE EXTENSION snowflake VERSION '1.0';
CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), phase text NOT NULL);
CREATE SCHEMA "Sales";
CREATE TABLE "Sales"."Line items" (id bigint PRIMARY KEY DEFAULT snowflake_nextval(),
    phase text NOT NULL) PARTITION BY RANGE (id);
CREATE TABLE "Sales".early PARTITION OF "Sales"."Line items" FOR VALUES FROM (0) TO (MAXVALUE);
));
$old->safe_psql('shop', q(
CREATE EXTENSION snowflake VERSION '1.0';
CREATE TABLE carts (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), phase text NOT NULL);
));
$old->safe_psql('postgres',
    "INSERT INTO orders (phase) SELECT 'before' FROM generate_series(1, 5000)");
$old->safe_psql('shop', "INSERT INTO carts (phase) SELECT 'before' FROM generate_series(1, 5000)");
# The last ids of the old cluster go to the partitioned table, so its key is the highest.
$old->safe_psql('postgres',
    q(INSERT INTO "Sales"."Line items" (phase) SELECT 'before' FROM generate_series(1, 5000)));
my $old_max = $old->safe_psql('postgres', q(SELECT max(id) FROM "Sales"."Line items"));
my $old_max_shop = max_id($old, 'carts', 'shop');
$old->stop;

my $new = snowflake_node('new', datacenter_id => 3, machine_id => 4);
$new->append_conf('postgresql.conf', "fsync = on\nsnowflake.key_floor_max_lead = '5min'\n");
# pg_upgrade writes its logs into the current directory's tree.
chdir $PostgreSQL::Test::Utils::tmp_check;
command_ok(
    [
        'pg_upgrade', '-d', $old->data_dir, '-D', $new->data_dir,
        '-b', $old->config_data('--bindir'), '-B', $new->config_data('--bindir'),
        '-s', $new->host, '-p', $old->port, '-P', $new->port
    ],
    'pg_upgrade with no step added for the extension');
ok(!-e $new->data_dir . '/snowflake_mark', 'pg_upgrade does not carry the mark file');

# Inserts rows of a phase into orders and checks that every new id is above the floor.
sub inserts_above {
    my ($phase, $count, $floor, $what) = @_;
    $new->safe_psql('postgres',
        "INSERT INTO orders (phase) SELECT '$phase' FROM generate_series(1, $count)");
    is($new->safe_psql('postgres',
            "SELECT count(*) FROM orders WHERE phase = '$phase' AND id > $floor"),
        $count, $what);
}

# The new cluster's clock is two minutes behind the old cluster's last id.
set_clock_offset($clock_file, '-120');
my $log_offset = -s $new->logfile // 0;
start_with_clock($new, $clock_file);
ok($new->wait_for_log(qr/snowflake mark file "snowflake_mark" not found/, $log_offset),
    'a start without the mark file is logged');
like(slurp_file($new->logfile, $log_offset),
    qr/DETAIL:  This is expected at the first start of a new data directory\. After pg_upgrade/,
    'the log says what a missing mark file means and what the extension does');

my $error = error_of($new, "INSERT INTO orders (phase) VALUES ('clock behind')");
like($error, qr/ERROR:  55000: a stored key holds Snowflake id generation back/,
    'with the clock behind the stored keys, generation is refused');
ok($new->wait_for_log(
        qr/raised the generator above key $old_max of column id of table "Sales"\.early in database "postgres"/,
        $log_offset),
    'the highest key of the database, in a partitioned table of another schema, raised it');
is($new->safe_psql('postgres', "SELECT count(*) FROM orders WHERE phase <> 'before'"),
    '0', 'nothing was issued below the old keys');

set_clock_offset($clock_file, '+0');
inserts_above('after', 5000, $old_max,
    'every id after the upgrade is above every id of the old cluster');

# The other database is checked on its own first use, even after a restart in between: the
# check stays armed until every database has been checked.
set_clock_offset($clock_file, '-120');
$new->stop;
$log_offset = -s $new->logfile;
start_with_clock($new, $clock_file);
ok($new->log_contains(qr/"snowflake_keys_unchecked" is present/, $log_offset),
    'after a restart the check is still armed');
$error = error_of($new, "INSERT INTO carts (phase) VALUES ('clock behind')", 'shop');
like($error, qr/clock moved backwards/,
    'the other database is refused too while the clock is behind the ids issued since');
ok($new->wait_for_log(qr/raised the generator above key $old_max_shop of column id of table public\.carts in database "shop"/,
        $log_offset),
    'the other database was checked on its own first use');
set_clock_offset($clock_file, '+0');
$new->safe_psql('shop', "INSERT INTO carts (phase) SELECT 'after' FROM generate_series(1, 5000)");
is($new->safe_psql('shop',
        "SELECT count(*) FROM carts WHERE phase = 'after' AND id > $old_max_shop"),
    '5000', 'the other database has only new ids above its old keys');

# A removed mark file, with the clock behind again, is covered the same way; a key written by
# hand in 2060 does not stop generation until then.
my $new_max = max_id($new, 'orders');
$new->safe_psql('postgres',
    "INSERT INTO orders VALUES (snowflake_encode('2060-01-01'::timestamptz, 3, 4, 0), 'by hand')");
$new->stop;
unlink $new->data_dir . '/snowflake_mark' or die "unlink: $!";
set_clock_offset($clock_file, '-120');
$log_offset = -s $new->logfile;
start_with_clock($new, $clock_file);
$error = error_of($new, "INSERT INTO orders (phase) VALUES ('clock behind')");
like($error, qr/a stored key holds Snowflake id generation back/,
    'after the mark file is removed, the keys hold it up');
ok($new->log_contains(qr/raised the generator above key $new_max of column id of table public\.orders in database "postgres"/,
        $log_offset),
    'the removed mark file is replaced by the highest key');
ok($new->log_contains(
        qr/LOG:  snowflake: key \d+ of column id of table public\.orders in database "postgres" is \d+ ms ahead of the clock, beyond snowflake\.key_floor_max_lead/,
        $log_offset),
    'the key of 2060 is left out of the floor, logged by name');
set_clock_offset($clock_file, '+0');
inserts_above('after removal', 1000, $new_max,
    'every id after the removal is above every stored key');
# Once every database that takes connections was checked in one run, the check is disarmed.
$new->safe_psql('shop', 'SELECT snowflake_nextval()');
ok($new->wait_for_log(qr/every database has been checked for keys/, $log_offset),
    'with every database checked, the check is disarmed');
ok(!-e $new->data_dir . '/snowflake_keys_unchecked', 'and its file is removed');
is($new->safe_psql('postgres', 'SELECT count(*) - count(DISTINCT id) FROM orders'),
    '0', 'one primary key holds the ids of before and after, without a duplicate');

# ALTER EXTENSION UPDATE from 1.0 through every script ends where a fresh install starts.
$new->safe_psql('postgres', 'ALTER EXTENSION snowflake UPDATE');
$new->safe_psql('postgres', 'CREATE DATABASE fresh');
$new->safe_psql('fresh', 'CREATE EXTENSION snowflake');
# The description of every member that sql/install.sql compares too, in one session each.
my $objects = slurp_file("$FindBin::RealBin/../extension_objects.sql")
  . 'SELECT o FROM pg_temp.extension_objects() AS o ORDER BY 1;';
is($new->safe_psql('postgres', 'SELECT extversion FROM pg_extension'),
    $new->safe_psql('fresh', 'SELECT extversion FROM pg_extension'),
    'ALTER EXTENSION UPDATE from 1.0 reaches the default version');
is($new->safe_psql('postgres', $objects), $new->safe_psql('fresh', $objects),
    'the updated extension has the same objects, definitions and comments as a fresh install');

done_testing();
