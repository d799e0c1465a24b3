# The settled bound on a standby and across servers. A reader on a streaming standby takes the
# bound and the WAL position from the primary, waits until the standby has replayed past the
# position, and reads below the bound there: under load it reads every committed row exactly
# once. The bound itself refuses on a standby. After a failover, the promoted standby's bound
# stays at or below the id of a transaction the old primary prepared. Two servers with their own
# pairs are each followed by their own bound.
use strict;
use warnings;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;

my $primary = snowflake_node('primary', datacenter_id => 7, machine_id => 1, allows_streaming => 1);
$primary->append_conf('postgresql.conf', "max_prepared_transactions = 4\nfsync = on\n");
$primary->start;
$primary->safe_psql('postgres', q(CREATE EXTENSION snowflake;
CREATE TABLE events (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), writer integer NOT NULL);
SELECT snowflake_track_changes('events')));
$primary->backup('base');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'base', has_streaming => 1);
$standby->append_conf('postgresql.conf', "max_prepared_transactions = 4\n");
$standby->start;

my $writer_script = "$PostgreSQL::Test::Utils::tmp_check/writer_030.sql";
PostgreSQL::Test::Utils::append_to_file($writer_script, q(BEGIN;
INSERT INTO events (writer) VALUES (:client_id);
SELECT pg_sleep(random() * 0.04);
COMMIT;
));
# 4 pgbench writers on a server, each of the given number of transactions.
sub start_writers {
    my ($node, $transactions) = @_;
    my ($out, $err) = ('', '');
    return IPC::Run::start(
        [ 'pgbench', '-n', '-c', '4', '-j', '4', '-t', $transactions, '-f', $writer_script,
            $node->connstr('postgres') ],
        '>', \$out, '2>', \$err);
}

like(error_of($standby, 'SELECT snowflake_settled_bound()'),
    qr/ERROR:  25006: snowflake_settled_bound\(\) cannot be used on a standby/,
    'the bound refuses on a standby');

# The standby recipe: the bound and its position from the primary, the read on the standby once
# it has replayed past the position.
my %read;
my $read_twice = 0;
my $cursor = 0;
my $writers = start_writers($primary, 250);
# The reader reads as long as the writers write, and once more after them.
while ($writers->pumpable) {
    my ($bound, $lsn) = split /\|/,
      $primary->safe_psql('postgres', 'SELECT bound, lsn FROM snowflake_settled_bound_lsn()');
    $standby->poll_query_until('postgres', "SELECT pg_last_wal_replay_lsn() >= '$lsn'")
      or die "the standby did not replay past $lsn";
    for my $id (split /\n/, $standby->safe_psql('postgres',
            "SELECT id FROM events WHERE id >= $cursor AND id < $bound ORDER BY id")) {
        $read_twice++ if $read{$id}++;
    }
    $cursor = $bound if $bound > $cursor;
    $writers->pump_nb;
}
$writers->finish;
my ($bound, $lsn) = split /\|/,
  $primary->safe_psql('postgres', 'SELECT bound, lsn FROM snowflake_settled_bound_lsn()');
$standby->poll_query_until('postgres', "SELECT pg_last_wal_replay_lsn() >= '$lsn'")
  or die "the standby did not replay past $lsn";
$read{$_}++ for split /\n/, $standby->safe_psql('postgres',
    "SELECT id FROM events WHERE id >= $cursor AND id < $bound ORDER BY id");
my @committed = split /\n/, $primary->safe_psql('postgres', 'SELECT id FROM events');
is(scalar(@committed), 1000, 'the writers committed 1,000 rows');
is(scalar(grep { !$read{$_} } @committed), 0, 'the reader on the standby read every one');
is($read_twice, 0, 'and none twice');

# The changes of the table (1.12) by the same recipe, after updates and deletes: the standby's
# pages below the primary's bound hold what the primary's own pages hold.
$primary->safe_psql('postgres', q(UPDATE events SET writer = writer + 10 WHERE id % 3 = 0;
DELETE FROM events WHERE id % 3 = 1));
($bound, $lsn) = split /\|/,
  $primary->safe_psql('postgres', 'SELECT bound, lsn FROM snowflake_settled_bound_lsn()');
$standby->poll_query_until('postgres', "SELECT pg_last_wal_replay_lsn() >= '$lsn'")
  or die "the standby did not replay past $lsn";
my $changes = "SELECT string_agg(version || kind || coalesce((data).writer, 0), ',' ORDER BY version)
    FROM snowflake_changes(NULL::events, 0, 100000, settled_below => $bound) WHERE kind <> 'next'";
is($standby->safe_psql('postgres', $changes), $primary->safe_psql('postgres', $changes),
    'a reader of the changes on the standby reads what the primary holds below its bound');

# A transaction prepared on the primary holds the promoted standby's bound back. Before it, more
# prepared transactions than there are entries, each committed: the standby's replay removes the
# files of those that ended, and keeps only the one still prepared.
for my $cycle (1 .. 10) {
    $primary->safe_psql('postgres', qq(BEGIN;
INSERT INTO events (writer) VALUES (-3);
PREPARE TRANSACTION 'cycle$cycle';
COMMIT PREPARED 'cycle$cycle'));
}
$primary->safe_psql('postgres', q(BEGIN;
INSERT INTO events (writer) VALUES (-1);
PREPARE TRANSACTION 'held'));
$primary->safe_psql('postgres', 'INSERT INTO events (writer) VALUES (-2)');
$primary->wait_for_catchup($standby);
opendir(my $claims, $standby->data_dir . '/snowflake_claims') or die "snowflake_claims: $!";
my @claim_files = grep { !/^\./ } readdir($claims);
closedir($claims);
is(scalar(@claim_files), 1, 'the standby keeps the file of the one prepared transaction only');
$primary->stop('immediate');
$standby->promote;
$standby->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()')
  or die 'the standby was not promoted';
my $after = $standby->safe_psql('postgres', 'SELECT snowflake_settled_bound()');
$standby->safe_psql('postgres', "COMMIT PREPARED 'held'");
cmp_ok($after, '<=', $standby->safe_psql('postgres', 'SELECT id FROM events WHERE writer = -1'),
    "the promoted standby's bound stays at or below the prepared transaction's id");
cmp_ok($standby->safe_psql('postgres', 'SELECT snowflake_settled_bound()'), '>',
    $standby->safe_psql('postgres', 'SELECT max(id) FROM events'),
    'and passes every row once it is committed');

# Two servers, each with its own pair, each followed by its own bound and cursor.
my $other = snowflake_node('other', datacenter_id => 7, machine_id => 2);
$other->start;
$other->safe_psql('postgres', q(CREATE EXTENSION snowflake;
CREATE TABLE events (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), writer integer NOT NULL);
SELECT snowflake_track_changes('events')));
# Without prepared transactions (the default), a PREPARE after an id fails with PostgreSQL's own
# error, which says what to set.
my ($prepare_status, $prepare_out, $prepare_err) = $other->psql('postgres', q(BEGIN;
SELECT snowflake_nextval();
PREPARE TRANSACTION 'refused'));
like($prepare_err, qr/prepared transactions are disabled/,
    'a PREPARE without max_prepared_transactions gets PostgreSQL\'s own error');
my %cursors = (standby => 0, other => 0);
my %read_from;
my @writers = (start_writers($standby, 150), start_writers($other, 150));
while (my @writing = grep { $_->pumpable } @writers) {
    for my $server ([ standby => $standby ], [ other => $other ]) {
        my ($name, $node) = @$server;
        my $bound = $node->safe_psql('postgres', 'SELECT snowflake_settled_bound()');
        $read_from{$name}{$_}++ for split /\n/, $node->safe_psql('postgres',
            "SELECT id FROM events WHERE id >= $cursors{$name} AND id < $bound ORDER BY id");
        $cursors{$name} = $bound if $bound > $cursors{$name};
    }
    $_->pump_nb for @writing;
}
$_->finish for @writers;
for my $server ([ standby => $standby ], [ other => $other ]) {
    my ($name, $node) = @$server;
    my $bound = $node->safe_psql('postgres', 'SELECT snowflake_settled_bound()');
    $read_from{$name}{$_}++ for split /\n/, $node->safe_psql('postgres',
        "SELECT id FROM events WHERE id >= $cursors{$name} AND id < $bound ORDER BY id");
    my @all = split /\n/, $node->safe_psql('postgres', 'SELECT id FROM events');
    is(scalar(grep { ($read_from{$name}{$_} // 0) != 1 } @all), 0,
        "each row of $name was read exactly once by its own bound");
}

$standby->stop;
$other->stop;
done_testing();
