# Readers that follow a table by id with the settled bound read every committed row exactly once,
# while eight writers hold their transactions open for random times after drawing ids, some
# rolling back, and one prepared transaction lives through a restart and a crash. A reader that
# follows the same table by its id alone is seen skipping rows in the same run, so the test can
# fail. The reading pattern is the README's ("Following a table by id"). Each phase ends when the
# reader by the id has read a number of new rows, never after a time, so that a busy machine
# only makes it longer; SNOWFLAKE_MATRIX=reduced reads a third as many (.ci/run reads them all on
# 15 alone).
use strict;
use warnings;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;

my $node = snowflake_node('settled', datacenter_id => 5, machine_id => 6);
$node->append_conf('postgresql.conf', "max_prepared_transactions = 12\nfsync = on\n");
$node->start;
$node->safe_psql('postgres', q(CREATE EXTENSION snowflake;
CREATE TABLE events (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), writer integer NOT NULL)));

# Each writer draws an id, holds its transaction open for up to 40 ms, then commits; one time in
# ten it rolls back, and one in ten it prepares, then commits the prepared transaction, so that
# readers run while claims move from backends into prepared transactions.
my $writer_script = "$PostgreSQL::Test::Utils::tmp_check/writer_029.sql";
PostgreSQL::Test::Utils::append_to_file($writer_script, q(\set end random(1, 10)
BEGIN;
INSERT INTO events (writer) VALUES (:client_id);
SELECT pg_sleep(random() * 0.04);
\if :end = 1
ROLLBACK;
\elif :end = 2
PREPARE TRANSACTION 'writer:client_id';
COMMIT PREPARED 'writer:client_id';
\else
COMMIT;
\endif
));
# The writers run until follow() stops them; the hour is only a limit for a test gone wrong.
sub start_writers {
    my ($out, $err) = ('', '');
    return IPC::Run::start(
        [ 'pgbench', '-n', '-c', '8', '-j', '8', '-T', '3600', '-f', $writer_script,
            $node->connstr('postgres') ],
        '>', \$out, '2>', \$err);
}

# The two readers: by the bound, and by the id alone. Each keeps its cursor across the phases.
my %read_by_bound;
my $read_twice = 0;
my $cursor = 0;
my %read_by_id;
my $last_id = 0;
my @bounds;
sub read_once {
    my $bound = $node->safe_psql('postgres', 'SELECT snowflake_settled_bound()');
    push @bounds, $bound;
    for my $id (split /\n/, $node->safe_psql('postgres',
            "SELECT id FROM events WHERE id >= $cursor AND id < $bound ORDER BY id")) {
        $read_twice++ if $read_by_bound{$id}++;
    }
    $cursor = $bound if $bound > $cursor;
    for my $id (split /\n/, $node->safe_psql('postgres',
            "SELECT id FROM events WHERE id > $last_id ORDER BY id")) {
        $read_by_id{$id} = 1;
        $last_id = $id;
    }
}
my $scale = full_matrix('029') ? 1 : 1 / 3;
# Runs the writers and reads all the while, until the reader by the id has read $rows more rows
# (the reader by the bound reads none while a prepared transaction holds the bound); then stops
# the writers and waits until their sessions are gone.
sub follow {
    my ($rows) = @_;
    my $target = keys(%read_by_id) + int($rows * $scale + 0.5);
    my $writers = start_writers();
    while (keys(%read_by_id) < $target) {
        $writers->pumpable or die 'the writers stopped before the reader read enough rows';
        read_once();
    }
    $writers->kill_kill;
    $node->poll_query_until('postgres',
        q(SELECT count(*) = 0 FROM pg_stat_activity WHERE application_name = 'pgbench'))
      or die 'the writers\' sessions did not end';
    # A writer stopped between its PREPARE and its COMMIT PREPARED leaves one behind.
    $node->safe_psql('postgres', "COMMIT PREPARED '$_'") for split /\n/, $node->safe_psql(
        'postgres', q(SELECT gid FROM pg_prepared_xacts WHERE gid LIKE 'writer%'));
}

# First the writers alone; then a prepared transaction draws an id below every writer's, and
# holds every bound at or below it until it is committed, across a restart and a crash; then the
# writers alone again, so that the reader is seen passing rows while writers hold ids.
follow(3000);
my $first_held = @bounds;
$node->safe_psql('postgres', q(BEGIN;
INSERT INTO events (writer) VALUES (-1);
PREPARE TRANSACTION 'held'));
follow(2000);
$node->restart;
# Before the first bound after the restart reads the claims' files: more prepared transactions
# than there are entries for, each committed, so that ended ones must make room.
for my $cycle (1 .. 30) {
    $node->safe_psql('postgres', qq(BEGIN;
INSERT INTO events (writer) VALUES (-2);
PREPARE TRANSACTION 'cycle$cycle';
COMMIT PREPARED 'cycle$cycle'));
}
# Still before any bound: the list of holders reads the files too, and shows the one held.
is($node->safe_psql('postgres', q(SELECT count(*) FROM snowflake_settled_holders WHERE gid = 'held')),
    '1', 'after the restart, the holders show the prepared transaction before any bound is read');
follow(2000);
my $held_file = sprintf('%s/snowflake_claims/%08X', $node->data_dir,
    $node->safe_psql('postgres', q(SELECT transaction FROM pg_prepared_xacts WHERE gid = 'held')));
kill9_and_wait($node);
# A claim file that does not read as written (here a negative number) holds every id back.
ok(-f $held_file, 'the prepared transaction has a claim file');
open(my $fh, '>', $held_file) or die "$held_file: $!";
print {$fh} "-1\n";
close($fh);
$node->start;
is($node->safe_psql('postgres', 'SELECT snowflake_settled_bound()'), '0',
    'a damaged claim file holds the bound at 0');
follow(2000);
my @held_bounds = @bounds[ $first_held .. $#bounds ];
cmp_ok($bounds[ $first_held - 1 ], '>', $bounds[0],
    'the bound moved while the writers alone held ids');
is($node->safe_psql('postgres',
        'SELECT count(*) FROM snowflake_settled_claims() WHERE prepared_xid IS NOT NULL'),
    '1', 'the prepared transaction still holds a claim after the restart and the crash');
$node->safe_psql('postgres', "COMMIT PREPARED 'held'");
my $held = $node->safe_psql('postgres', 'SELECT id FROM events WHERE writer = -1');
ok(!grep({ $_ > $held } @held_bounds), 'no bound passed the prepared transaction\'s id');
follow(3000);
read_once();

my %committed = map { $_ => 1 } split /\n/, $node->safe_psql('postgres', 'SELECT id FROM events');
my @missed = grep { !$read_by_bound{$_} } keys %committed;
is(scalar(@missed), 0, 'the reader by the bound read every committed row');
is($read_twice, 0, 'and none twice');
ok(!grep({ !$committed{$_} } keys %read_by_bound), 'and no row that was not committed');
my @skipped = grep { !$read_by_id{$_} } keys %committed;
cmp_ok(scalar(@skipped), '>', 0,
    'the reader by the id alone skipped ' . scalar(@skipped) . ' committed rows');

$node->stop;
done_testing();
