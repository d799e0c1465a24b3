# pg_upgrade run the usual way, with no step for this extension, keeps ids unique: the new data
# directory has no mark file, and before any id is issued a background worker reads the stored
# keys of this server's node pair in every database. With default settings and the new
# cluster's clock two minutes behind the old cluster's last id, those keys are further ahead than
# snowflake.key_floor_max_lead: the first call, in a database other than the one that holds the
# highest key, is stopped with 55000 naming that key, in a partitioned table of a quoted schema,
# after every database was read; the calling database's own highest key is logged by name, and
# the end of the read warns of the highest of all. Once the clock has passed them, every id is
# above every database's keys, the file that kept the read armed is gone, and a restart trusts the
# mark again. A removed mark file, with the clock 30 s behind the
# highest key (within the bound), has that key hold generation back until the clock passes it; a
# key of 2060 written by hand stops generation until a superuser (not a plain role) releases it
# with snowflake_release_key(), which is logged with the role. The extension, created at 1.0
# before the upgrade, then goes through every update script and ends equal to a fresh install.
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
# The superuser that owns every table, as the log and the messages name it.
my $user = $old->safe_psql('postgres', 'SELECT current_user');
my $owner = $old->safe_psql('postgres', 'SELECT quote_ident(current_user)');
$old->stop;

my $new = snowflake_node('new', datacenter_id => 3, machine_id => 4);
$new->append_conf('postgresql.conf', "fsync = on\n");
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
my $unchecked = $new->data_dir . '/snowflake_keys_unchecked';

# Inserts rows of a phase into a table and checks that every new id is above the floor.
sub inserts_above {
    my ($table, $dbname, $phase, $count, $floor, $what) = @_;
    $new->safe_psql($dbname,
        "INSERT INTO $table (phase) SELECT '$phase' FROM generate_series(1, $count)");
    is($new->safe_psql($dbname,
            "SELECT count(*) FROM $table WHERE phase = '$phase' AND id > $floor"),
        $count, $what);
}

# The new cluster's clock is two minutes behind the old cluster's last id, further than
# snowflake.key_floor_max_lead (60 s by default) allows to wait for. It stands there until
# generation is to resume, however long the upgrade and the start took.
freeze_clock($clock_file, unix_ms_of($old_max) - 120_000);
my $log_offset = -s $new->logfile // 0;
start_with_clock($new, $clock_file);
ok($new->wait_for_log(qr/snowflake mark file "snowflake_mark" not found/, $log_offset),
    'a start without the mark file is logged');
like(slurp_file($new->logfile, $log_offset),
    qr/DETAIL:  This is expected at the first start of a new data directory\. After pg_upgrade, .*: no id is issued until a background worker has read the stored keys of this server's node pair in every database/,
    'the log says what a missing mark file means and what the extension does');

# The first call comes from the database whose keys are not the highest.
my $error = error_of($new, "INSERT INTO carts (phase) VALUES ('clock behind')", 'shop');
like($error, qr/ERROR:  55000: a stored key \d+ ms ahead of the clock stops Snowflake id generation/,
    'with the clock two minutes behind the stored keys, they stop generation');
like($error,
    qr/DETAIL:  .*Keys further ahead than snowflake\.key_floor_max_lead \(60000 ms\): 15000, in 3 columns.*the highest is key $old_max of column id of table "Sales"\.early \(owner \Q$owner\E\) in database "postgres"/,
    'a call in another database counts the keys and columns beyond the bound, and names the highest key of all, in a partitioned table of a quoted schema');
like($error,
    qr/HINT:  Did a server with this node pair ever run with its clock at or past .*resume without risk: set snowflake\.key_floor_max_lead to '1\d\ds' or more .*Release it with SELECT snowflake_release_key\($old_max\) only if no server with this node pair issued these keys/,
    'the hint asks the question the operator can answer, offers the steps without risk first, and the release last');
my $log = slurp_file($new->logfile, $log_offset);
like($log,
    qr/LOG:  snowflake: key $old_max_shop of column id of table public\.carts \(owner \Q$owner\E\) in database "shop" is \d+ ms ahead of the clock, beyond snowflake\.key_floor_max_lead \(60000 ms\); it stops generation/,
    "the calling database's own highest key is logged by name");
like($log,
    qr/WARNING:  snowflake: key $old_max of column id of table "Sales"\.early \(owner \Q$owner\E\) in database "postgres" is beyond snowflake\.key_floor_max_lead: generation stops/,
    'the end of the read warns of the highest key by name');
like($log,
    qr/snowflake: the stored keys of 4 databases were read in \d+ ms after a start without a mark file of this data directory; ids are issued from now on/,
    'every database, the templates included, was read before the first id');
is($new->safe_psql('postgres', "SELECT count(*) FROM orders WHERE phase <> 'before'"),
    '0', 'nothing was issued below the old keys');
ok(-e $unchecked, 'while a key stops generation, the file that keeps the read armed is there');

# Once the clock has passed the keys, generation resumes by itself.
set_clock_offset($clock_file, '+0');
inserts_above('carts', 'shop', 'after', 5000, $old_max,
    "the other database's new ids are above every database's keys, not only its own");
inserts_above('orders', 'postgres', 'after', 5000, $old_max,
    'every id after the upgrade is above every id of the old cluster');

# Once the clock has passed the key that stopped generation, the read has nothing left to keep
# armed: the file goes, and a restart trusts the mark again.
ok(!-e $unchecked, 'once the clock has passed the key, the file that kept the read armed is gone');
$new->stop;
$log_offset = -s $new->logfile;
start_with_clock($new, $clock_file);
like($new->safe_psql('postgres', 'SELECT snowflake_nextval()'), qr/^\d+$/, 'the restarted cluster generates');
ok(!$new->log_contains(qr/stored keys of \d+ databases were read/, $log_offset),
    'from the mark, without reading the keys again');
my $new_max = max_id($new, 'orders');
inserts_above('orders', 'postgres', 'after restart', 1000, $new_max,
    'generation goes on above the ids issued before the restart');

# A removed mark file, with the clock behind again: the highest key, 30 s ahead, holds
# generation back; a key written by hand in 2060 stops it. The clock stands 30 s behind that key
# until generation is to resume.
$new_max = max_id($new, 'orders');
my $key_2060 = $new->safe_psql('postgres', q(
INSERT INTO orders VALUES (snowflake_encode('2060-01-01'::timestamptz, 3, 4, 0), 'by hand')
RETURNING id));
# The release function came in 1.8; the other database is updated for it.
$new->safe_psql('shop', 'ALTER EXTENSION snowflake UPDATE; CREATE ROLE clerk');
$new->stop;
unlink $new->data_dir . '/snowflake_mark' or die "unlink: $!";
freeze_clock($clock_file, unix_ms_of($new_max) - 30_000);
$log_offset = -s $new->logfile;
start_with_clock($new, $clock_file);
$error = error_of($new, "INSERT INTO orders (phase) VALUES ('clock behind')");
like($error, qr/ERROR:  55000: a stored key \d+ ms ahead of the clock stops Snowflake id generation/,
    'after the mark file is removed, the key of 2060 stops generation');
like($error,
    qr/DETAIL:  .*: 1, in 1 columns, which the server log names; the highest is key $key_2060 of column id of table public\.orders \(owner \Q$owner\E\) in database "postgres"/,
    'the refusal names the key of 2060 and its table');
like($error, qr/HINT:  .*resume without risk: wait until .*, which is further ahead than snowflake\.key_floor_max_lead can reach/,
    'a key further ahead than the bound can reach is waited for, or released');
ok(-e $unchecked, 'the start without the mark file creates the file again');
like(error_of($new, "SET ROLE clerk; SELECT snowflake_release_key($key_2060)", 'shop'),
    qr/ERROR:  42501: permission denied for function snowflake_release_key/,
    'a plain role cannot release the key');
$new->safe_psql('shop', "SELECT snowflake_release_key($key_2060)");
ok($new->log_contains(
        qr/LOG:  snowflake: key $key_2060 of column id of table public\.orders \(owner \Q$owner\E\) in database "postgres" was released by role "\Q$user\E"/,
        $log_offset),
    'the release by the superuser is logged with its role');
ok(!-e $unchecked, 'the release removes the file');
$error = error_of($new, "INSERT INTO orders (phase) VALUES ('clock behind')");
like($error, qr/ERROR:  55000: a stored key holds Snowflake id generation back until/,
    'released, the key of 2060 stops nothing, and the highest key within the bound holds generation back');
ok($new->log_contains(
        qr/raised the generator above key $new_max of column id of table public\.orders \(owner \Q$owner\E\) in database "postgres"/,
        $log_offset),
    'the removed mark file is replaced by the highest key within the bound');
set_clock_offset($clock_file, '+0');
inserts_above('orders', 'postgres', 'after removal', 1000, $new_max,
    'every id after the removal is above every stored key but the released one');
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
