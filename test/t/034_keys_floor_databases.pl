# The rules of the read of stored keys in every database, after a start without the mark file
# (doc/operations.md "Guarantees", doc/security.md "The floor from stored keys"): a key a day
# ahead stops generation until a superuser releases it, and snowflake.key_floor_max_lead raised
# past a key turns the stop into a hold; the first call in another database than the one that
# holds the keys; a database whose defaults ask for a deferrable snapshot, one kept locked by an
# open ALTER DATABASE, databases renamed during the read, and one that takes no connections;
# concurrent first calls; a change of the node ids reads again for the new pair; a role's own
# type named snowflake; columns only a BRIN or hash index leads; tables changed over and over
# during the read. The tables' shapes are in 019_keys_floor.pl.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;

plan skip_all => 'libfaketime is not installed' unless have_libfaketime();

my $clock_file = "$PostgreSQL::Test::Utils::tmp_check/clock_offset_034";
# Everything below is alice's: a plain role, who can only create tables in her schema.
my $node = keys_floor_node('keys_databases', $clock_file, q(
snowflake.key_floor_max_lead = '1min'
max_connections = 20
));
$node->safe_psql('postgres', q(SET ROLE alice;
CREATE TABLE "Odd Schema".base (id bigint PRIMARY KEY DEFAULT snowflake_nextval());
INSERT INTO "Odd Schema".base SELECT FROM generate_series(1, 1000);
));

# A key of this server's pair a day ahead stops generation, by name, until a superuser releases
# it: this server may have issued it with a clock a day ahead, or a role wrote it.
my $day_key = $node->safe_psql('postgres', q(SET ROLE alice;
INSERT INTO "Odd Schema".base VALUES (snowflake_encode(now() + interval '23 hours', 3, 4, 0))
RETURNING id));
my $offset = restart_reading_keys($node, $clock_file, 1);
my $stopped = error_of($node, 'SELECT snowflake_nextval()');
like($stopped, qr/ERROR:  55000: a stored key \d+ ms ahead of the clock stops Snowflake id generation/,
    'a key a day ahead stops generation');
like($stopped,
    qr/DETAIL:  .*the highest is key $day_key of column id of table "Odd Schema"\.base \(owner alice\) in database "postgres"/,
    'the message names the key, its column, table, owner and database');
like($stopped, qr/HINT:  .*SELECT snowflake_release_key\($day_key\) only if no server with this node pair issued these keys/,
    'the hint names the release, for keys no server with this pair issued');
ok($node->log_contains(
        qr/LOG:  snowflake: key $day_key of column id of table "Odd Schema"\.base \(owner alice\) in database "postgres" is \d+ ms ahead of the clock, beyond snowflake\.key_floor_max_lead \(60000 ms\); it stops generation/,
        $offset),
    'the server log names it too');
restart_reading_keys($node, $clock_file, 0);
like(error_of($node, 'SELECT snowflake_nextval()'), qr/stops Snowflake id generation/,
    'a restart does not forget it');
like(error_of($node, "SET ROLE alice; SELECT snowflake_release_key($day_key)"),
    qr/42501: permission denied for function snowflake_release_key/,
    'the owner of the table cannot release it');
like(error_of($node, 'SELECT snowflake_release_key(' . ($day_key - 1) . ')'),
    qr/22023: key \d+ does not stop Snowflake id generation\nDETAIL:  Key $day_key does/,
    'a superuser releases only the key that stops generation');
$offset = -s $node->logfile;
$node->safe_psql('postgres', "SELECT snowflake_release_key($day_key)");
like($node->safe_psql('postgres', 'SELECT snowflake_nextval()'), qr/^\d+$/,
    'released, generation resumes');
ok($node->log_contains(
        qr/LOG:  snowflake: key $day_key of column id of table "Odd Schema"\.base \(owner alice\) in database "postgres" was released by role "\w+"/,
        $offset),
    'the release is logged with the role that released it');
$node->safe_psql('postgres', qq(DELETE FROM "Odd Schema".base WHERE id = $day_key));

# The way out that the hint offers first: snowflake.key_floor_max_lead raised past a key's lead
# and reloaded turns the stop into a hold that ends with the clock.
my $minutes_key = $node->safe_psql('postgres', q(SET ROLE alice;
INSERT INTO "Odd Schema".base VALUES (snowflake_encode(now() + interval '3 minutes', 3, 4, 0))
RETURNING id));
restart_reading_keys($node, $clock_file, 1);
like(error_of($node, 'SELECT snowflake_nextval()'),
    qr/stops Snowflake id generation.*\nDETAIL:  .*the highest is key $minutes_key .*\nHINT:  .*set snowflake\.key_floor_max_lead to '1[78]\ds' or more/,
    'a key three minutes ahead stops generation, and the hint names the bound that reaches it');
set_and_reload($node, 'snowflake.key_floor_max_lead', '5min');
like(error_of($node, 'SELECT snowflake_nextval()'),
    qr/ERROR:  55000: a stored key holds Snowflake id generation back until .*\nDETAIL:  .*key $minutes_key of column id of table "Odd Schema"\.base/,
    'with the bound raised past it and reloaded, the key holds generation back until the clock passes it');
set_and_reload($node, 'snowflake.key_floor_max_lead', '1min');
$node->safe_psql('postgres', qq(DELETE FROM "Odd Schema".base WHERE id = $minutes_key));
restart_reading_keys($node, $clock_file, 1);

# The first ids after a start without the mark come from another database than the one that
# stores the keys, with the clock behind them: none equals a key of the first database. The keys
# are issued with the clock 8 s ahead, and the server restarts with its clock standing 8 s behind
# them, however long the restart takes; then the clock runs from now and passes them.
$node->safe_psql('postgres', 'CREATE DATABASE second');
$node->safe_psql('second', q(CREATE EXTENSION snowflake;
CREATE TABLE queue (id bigint PRIMARY KEY DEFAULT snowflake_nextval())));
set_clock_offset($clock_file, '+8');
$node->safe_psql('postgres', q(SET ROLE alice;
CREATE TABLE "Odd Schema".app (id bigint PRIMARY KEY DEFAULT snowflake_nextval());
INSERT INTO "Odd Schema".app SELECT FROM generate_series(1, 20000)));
my $app_max = max_id($node, '"Odd Schema".app');
freeze_clock($clock_file, unix_ms_of($app_max) - 8000);
restart_reading_keys($node, $clock_file, 1);
like(error_of($node, 'INSERT INTO queue SELECT FROM generate_series(1, 100)', 'second'),
    qr/55000: a stored key holds .*\n.*key $app_max of column id of table "Odd Schema"\.app \(owner alice\) in database "postgres"/,
    'a call in another database is held back by the keys of the first');
set_clock_offset($clock_file, '+0');
ok($node->poll_query_until('second', 'SELECT snowflake_nextval() > 0'),
    'the other database takes ids once the clock passes them');
$node->safe_psql('second', 'INSERT INTO queue SELECT FROM generate_series(1, 20000)');
is($node->safe_psql('second', "SELECT count(*) FROM queue WHERE id <= $app_max"), '0',
    'every id the other database took is above the keys of the first');

# A database's defaults cannot stall its reader: here they ask for a deferrable serializable
# read-only snapshot, which waits while a serializable transaction writes.
$node->safe_psql('postgres', q(
ALTER DATABASE second SET default_transaction_isolation = 'serializable';
ALTER DATABASE second SET default_transaction_read_only = on;
ALTER DATABASE second SET default_transaction_deferrable = on));
restart_keys_unread($node, $clock_file);
my $serializable = $node->background_psql('postgres');
$serializable->query_safe(q(BEGIN ISOLATION LEVEL SERIALIZABLE;
INSERT INTO "Odd Schema".app VALUES (snowflake_encode(now() - interval '1 day', 3, 4, 0))));
read_keys_now($node, 3);
like($node->safe_psql('postgres', 'SELECT snowflake_nextval()'), qr/^\d+$/,
    'a database whose defaults ask for a deferrable serializable snapshot does not stall the read');
$serializable->query_safe('ROLLBACK');
$serializable->quit;
$node->safe_psql('postgres', 'ALTER DATABASE second RESET ALL');

# An ALTER DATABASE left open in a transaction would hold up the connection of the database's
# reader: the reader waits a second for the database's lock, then the calls say which database,
# and the read goes on once the transaction ends.
restart_keys_unread($node, $clock_file);
my $renamer = $node->background_psql('postgres');
$renamer->query_safe('BEGIN; ALTER DATABASE second RENAME TO second_renamed');
read_keys_now($node, 3);
my $renaming_error;
for (1 .. 30) {
    $renaming_error = error_of($node, "SET statement_timeout = '3s'; SELECT snowflake_nextval()");
    last if $renaming_error =~ /the read failed/;
}
like($renaming_error,
    qr/DETAIL:  database "second" is locked by another session \(an ALTER or DROP DATABASE/,
    'a database kept locked by an open ALTER DATABASE is named');
$renamer->query_safe('ROLLBACK');
$renamer->quit;
ok($node->poll_query_until('postgres', 'SELECT snowflake_nextval() > 0'),
    'and the read goes on once its transaction ends');

# ALTER DATABASE statements that come while the reader holds their database's lock wait for it,
# and the database's reader connects all the same: four sessions rename a database each, over and
# over, while twelve reads (one per node pair) go through every database. Were its connection to
# queue behind a rename, the read, the rename and the calls would wait for each other until the
# rename's statement_timeout ended it.
$node->safe_psql('postgres', "CREATE DATABASE renamed_$_") for 0 .. 3;
restart_keys_unread($node, $clock_file);
my $rename_script = "$PostgreSQL::Test::Utils::tmp_check/rename_019.sql";
PostgreSQL::Test::Utils::append_to_file($rename_script,
    "ALTER DATABASE renamed_:client_id RENAME TO moved_:client_id;\n"
      . "ALTER DATABASE moved_:client_id RENAME TO renamed_:client_id;\n");
my ($renames_out, $renames_err) = ('', '');
my $renames = IPC::Run::start(
    [ 'pgbench', '-n', '-c', '4', '-j', '4', '-T', '6', '-f', $rename_script,
        $node->connstr('postgres') . ' options=--statement_timeout=3s' ],
    '>', \$renames_out, '2>', \$renames_err);
read_keys_now($node, 3);
my $reads_ended = 0;
for my $machine_id (5 .. 16) {
    set_and_reload($node, 'snowflake.machine_id', $machine_id);
    $reads_ended++ if $node->safe_psql('postgres', 'SELECT snowflake_nextval()') =~ /^\d+$/;
}
$renames->finish;
is($reads_ended, 12, 'reads while databases are renamed end');
is($renames_err, '', 'no rename waited for a read until its timeout');
like($renames_out, qr/number of failed transactions: 0 /, 'and every rename went through');
set_and_reload($node, 'snowflake.machine_id', '4');
$node->safe_psql('postgres', "DROP DATABASE renamed_$_") for 0 .. 3;

# A database that takes no connections, without the extension, holding keys in a column an index
# leads: it is read too.
$node->safe_psql('postgres', 'CREATE DATABASE closed');
my $closed_key = $node->safe_psql('postgres',
    q(SELECT snowflake_encode(now() + interval '40 seconds', 3, 4, 1)));
$node->safe_psql('closed',
    "CREATE TABLE kept (id bigint PRIMARY KEY); INSERT INTO kept VALUES ($closed_key)");
$node->safe_psql('postgres', 'ALTER DATABASE closed ALLOW_CONNECTIONS false');
restart_reading_keys($node, $clock_file, 1);
like(error_of($node, 'SELECT snowflake_nextval()'),
    qr/DETAIL:  .*key $closed_key of column id of table public\.kept \(owner \w+\) in database "closed"/,
    'a database that takes no connections is read before the first id');
$node->safe_psql('postgres', 'DROP DATABASE closed');
restart_reading_keys($node, $clock_file, 0);

# Concurrent first calls in two databases on a start without the mark file: one read, and
# every call gets its id once it is over.
$offset = restart_reading_keys($node, $clock_file, 1);
$node->pgbench('-n -c 8 -j 8 -t 1', 0, [qr/processed: 8\/8/], [qr/^$/],
    'eight first calls at once', { 'first' => 'SELECT snowflake_nextval();' });
like($node->safe_psql('second', 'SELECT snowflake_nextval()'), qr/^\d+$/,
    'and one in another database');
my @reads = slurp_file($node->logfile, $offset) =~ /the stored keys of \d+ databases were read in \d+ ms/g;
is(scalar @reads, 1, 'the keys were read once');
ok(!-e $node->data_dir . '/snowflake_keys_unchecked',
    'and the floor is disarmed once every database was read');

# A change of the node ids reads the keys again for the new pair: a key of (3, 5) a little ahead
# holds generation back once machine_id is 5, though the read for (3, 4) saw nothing of it.
my $other_pair_key = $node->safe_psql('postgres', q(SET ROLE alice;
INSERT INTO "Odd Schema".app VALUES (snowflake_encode(now() + interval '40 seconds', 3, 5, 0))
RETURNING id));
restart_reading_keys($node, $clock_file, 1);
like($node->safe_psql('postgres', 'SELECT snowflake_nextval()'), qr/^\d+$/,
    'the key of another pair holds nothing back');
set_and_reload($node, 'snowflake.machine_id', '5');
like(error_of($node, 'SELECT snowflake_nextval()'),
    qr/DETAIL:  .*key $other_pair_key of column id of table "Odd Schema"\.app/,
    'with the pair changed to its, the key holds generation back');
set_and_reload($node, 'snowflake.machine_id', '4');
$node->safe_psql('postgres', qq(DELETE FROM "Odd Schema".app WHERE id = $other_pair_key));
# Before 1.6 a role could make a type named snowflake in the extension's schema: it is not taken
# for the extension's type, whose keys are bigint's, so its column is not read at all.
$node->safe_psql('postgres', 'CREATE DATABASE older');
$node->safe_psql('older', q(CREATE EXTENSION snowflake VERSION '1.5';
GRANT CREATE ON SCHEMA public TO alice;
SET ROLE alice;
CREATE TYPE public.snowflake AS (high integer, low integer);
CREATE TABLE impostor (id public.snowflake PRIMARY KEY);
INSERT INTO impostor VALUES ((2147483647, 2147483647))));
$offset = restart_reading_keys($node, $clock_file, 1);
like($node->safe_psql('older', 'SELECT snowflake_nextval()'), qr/^\d+$/,
    "generation goes on beside a role's own type named snowflake");
ok($node->log_contains(qr/no key of this server's node pair ahead of the clock within snowflake\.key_floor_max_lead in database "older" \(0 columns read\)/,
        $offset),
    'whose column is not read');

# Columns that only a BRIN or a hash index leads, with keys written by hand (no default): read
# whole, their keys hold generation back like any other (1.9 read only columns a btree led).
for my $kind ('brin', 'hash') {
    my $key = $node->safe_psql('postgres',
        q(SELECT snowflake_encode(now() + interval '40 seconds', 3, 4, 5)));
    $node->safe_psql('postgres', qq(SET ROLE alice;
CREATE TABLE "Odd Schema".led_by_$kind (id bigint NOT NULL, note text);
CREATE INDEX ON "Odd Schema".led_by_$kind USING $kind (id);
INSERT INTO "Odd Schema".led_by_$kind VALUES ($key, 'by hand')));
    restart_reading_keys($node, $clock_file, 1);
    like(error_of($node, 'SELECT snowflake_nextval()'),
        qr/DETAIL:  .*key $key of column id of table "Odd Schema"\.led_by_$kind \(owner alice\)/,
        "a key in a column that only a $kind index leads holds generation back");
    $node->safe_psql('postgres', qq(DROP TABLE "Odd Schema".led_by_$kind));
    restart_reading_keys($node, $clock_file, 1);
}

# A plain role that changes her tables over and over during the read cannot keep it beginning
# again. In a database of their own: a table read whole, which makes each pass of the read take a
# while, then tables that she truncates, vacuums full, clusters and rewrites in a loop (pgbench).
$node->safe_psql('postgres', 'CREATE DATABASE churn OWNER alice');
$node->safe_psql('churn', q(CREATE EXTENSION snowflake;
SET ROLE alice;
CREATE TABLE slow (id bigint NOT NULL DEFAULT snowflake_nextval());
INSERT INTO slow SELECT snowflake_encode(now() - interval '1 day', 3, 4, 0)
    FROM generate_series(1, 1000000);
));
# pgbench numbers its clients from 0.
$node->safe_psql('churn', join("\n", map { qq(SET ROLE alice;
CREATE TABLE churned_$_ (id bigint DEFAULT snowflake_nextval(), n integer,
    CONSTRAINT key_of_churned_$_ PRIMARY KEY (id));) } 0 .. 8));
my $churn_script = "$PostgreSQL::Test::Utils::tmp_check/churn_019.sql";
PostgreSQL::Test::Utils::append_to_file($churn_script, join('', map { "$_;\n" }
    'TRUNCATE churned_:client_id', 'VACUUM FULL churned_:client_id',
    'CLUSTER churned_:client_id USING key_of_churned_:client_id',
    'ALTER TABLE churned_:client_id ALTER n TYPE bigint',
    'ALTER TABLE churned_:client_id ALTER n TYPE integer'));
# Runs pgbench as alice with the given number of clients (each on its own table) until stopped.
sub start_churn {
    my ($clients) = @_;
    my ($out, $err) = ('', '');
    return IPC::Run::start(
        [ 'pgbench', '-n', '-c', $clients, '-j', $clients, '-T', '300', '-f', $churn_script,
            $node->connstr('churn') . ' user=alice' ],
        '>', \$out, '2>', \$err);
}
# One table changed again and again: locked from the next pass on, it changes no more, and the
# read ends while she goes on.
restart_reading_keys($node, $clock_file, 1);
my $churn = start_churn(1);
$node->poll_query_until('churn', q(SELECT count(*) > 0 FROM pg_stat_activity
    WHERE usename = 'alice' AND datname = 'churn'))
  or die 'pgbench did not start';
$offset = -s $node->logfile;
like($node->safe_psql('postgres', "SET statement_timeout = '60s'; SELECT snowflake_nextval()"),
    qr/^\d+$/, 'a table truncated, vacuumed, clustered and rewritten over and over does not keep the read going');
ok($churn->pumpable, 'while she still changes it');
$churn->kill_kill;
$churn->finish;
# Nine tables changed at once, more than a read begins again for: the read fails, naming them, and
# is retried; once the changes stop, it ends.
restart_reading_keys($node, $clock_file, 1);
$churn = start_churn(9);
my $churning;
for (1 .. 100) {
    $churning = error_of($node, "SET statement_timeout = '60s'; SELECT snowflake_nextval()");
    last if $churning =~ /the read failed/;
}
like($churning,
    qr/DETAIL:  reading database "churn": 9 tables were truncated, rewritten or dropped, or lost a column, while the keys of this database were read: (public\.churned_\d \(owner alice\)(, )?){9}/,
    'nine tables changed under the read fail it, named with their owner');
$churn->kill_kill;
$churn->finish;
ok($node->poll_query_until('postgres', 'SELECT snowflake_nextval() > 0'),
    'once they stop changing, the read ends');
$node->safe_psql('postgres', 'DROP DATABASE churn');

done_testing();
