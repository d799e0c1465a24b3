# Restores are clones: a PITR copy of a running primary carries its node ids and mark, and once it
# is promoted while the original still runs, the two issue the same ids. The copy warns, before
# it takes writes and on each session's first id, until it gets its own node pair; the peer check
# finds the pair in use twice; with a new pair the two never collide. A standby promoted as a
# failover target does not warn.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;

use SnowflakeTest;

my $primary = snowflake_node('original', allows_streaming => 1, has_archiving => 1,
    datacenter_id => 9, machine_id => 9);
$primary->start;
$primary->safe_psql('postgres', q(
CREATE EXTENSION snowflake;
CREATE TABLE issued (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), origin text NOT NULL);
));
$primary->backup('base');
$primary->safe_psql('postgres',
    "INSERT INTO issued (origin) SELECT 'original' FROM generate_series(1, 100000)");
my $primary_max = max_id($primary, 'issued');
archive_current_wal($primary);

# A point-in-time restore of the archive, started next to its running original.
my $copy = PostgreSQL::Test::Cluster->new('copy');
$copy->init_from_backup($primary, 'base', has_restoring => 1, standby => 0);
$copy->start;
$copy->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()')
  or die 'the restore did not end its recovery';
ok($copy->log_contains(
        qr/WARNING:  snowflake: this server was started from a backup \(recovery\.signal\) with node ids 9\/9/),
    'the restored copy warns in its log at start');
is(max_id($copy, 'issued'), $primary_max, 'the copy restored every id of the original');

my ($ret, $stdout, $stderr) = $copy->psql('postgres', 'SELECT snowflake_nextval() > 0');
is($stdout, 't', 'the promoted copy generates');
like($stderr, qr/WARNING:  snowflake: this server was started from a backup/,
    "the session's first id on the copy carries the warning");
like($stderr, qr/give it a snowflake\.datacenter_id and snowflake\.machine_id pair/,
    'the warning says what to do');

# Both servers generate at full speed at the same time; the ids are compared afterwards. A barrier
# on each server: a session holds an advisory lock that the COPY there waits for first, and both
# are released once both COPYs wait, so that they start together.
sub duplicates_when_both_generate {
    my ($label) = @_;
    my $count = 1_000_000;
    my @barriers;
    my @runs;
    for my $node ($primary, $copy) {
        my $barrier = $node->background_psql('postgres');
        $barrier->query_safe('SELECT pg_advisory_lock(42)');
        push @barriers, $barrier;
        my $file = "$PostgreSQL::Test::Utils::tmp_check/" . $node->name . "_$label.ids";
        push @runs, [
            $file,
            IPC::Run::start(
                [
                    'psql', '-XAtq', '-d', $node->connstr('postgres'),
                    '-c', 'DO $$BEGIN PERFORM pg_advisory_lock_shared(42); END$$', '-c',
                    "COPY (SELECT snowflake_nextval() FROM generate_series(1, $count)) TO STDOUT"
                ],
                '>', $file, '2>', '/dev/null')
        ];
    }
    for my $node ($primary, $copy) {
        $node->poll_query_until('postgres',
            q(SELECT count(*) = 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted))
          or die 'the COPY on ' . $node->name . ' did not reach the barrier';
    }
    $_->query_safe('SELECT pg_advisory_unlock(42)') for @barriers;
    $_->quit for @barriers;
    $_->[1]->finish for @runs;
    my %seen;
    open my $original_ids, '<', $runs[0][0] or die $!;
    while (<$original_ids>) { $seen{$_} = 1 }
    close $original_ids;
    is(scalar(keys %seen), $count, "$label: the original issued $count distinct ids");
    my ($duplicates, $lines) = (0, 0);
    open my $copy_ids, '<', $runs[1][0] or die $!;
    while (<$copy_ids>) { $lines++; $duplicates++ if $seen{$_} }
    close $copy_ids;
    is($lines, $count, "$label: the copy issued $count ids");
    unlink $_->[0] for @runs;
    return $duplicates;
}

my $duplicates = duplicates_when_both_generate('same pair');
cmp_ok($duplicates, '>', 0,
    "with the original's node pair, the copy repeats its ids ($duplicates duplicates)");

my $peers = "ARRAY['host=" . $primary->host . ' port=' . $primary->port . " dbname=postgres']";
like($copy->safe_psql('postgres', "SELECT problem FROM snowflake_check_peers($peers)"),
    qr/holds this server's node pair \(\d+, \d+\)/, 'the peer check finds the pair in use twice');

# The rule: give the copy its own pair before it takes writes.
set_and_reload($copy, 'snowflake.machine_id', '10');
($ret, $stdout, $stderr) = $copy->psql('postgres', 'SELECT snowflake_nextval() > 0');
is($stderr, '', 'with its own pair, the copy no longer warns');
is(duplicates_when_both_generate('own pair'), 0,
    'with its own pair, the copy never repeats an id of the original');
is($copy->safe_psql('postgres', "SELECT count(*) FROM snowflake_check_peers($peers) "
        . "WHERE problem IS NOT NULL"), '0', 'the peer check is clean');

# A standby started from the same backup and promoted is a failover target: no warning.
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'base', has_streaming => 1);
$standby->start;
$primary->wait_for_catchup($standby);
my $standby_peer =
  "ARRAY['host=" . $standby->host . ' port=' . $standby->port . " dbname=postgres']";
is($primary->safe_psql('postgres',
        "SELECT coalesce(problem, 'none') FROM snowflake_check_peers($standby_peer)"),
    'none', 'the peer check finds no duplicate in a standby with its primary\'s pair');
$primary->stop;
$standby->promote;
($ret, $stdout, $stderr) = $standby->psql('postgres',
    "INSERT INTO issued (origin) VALUES ('standby') RETURNING id > $primary_max");
is($stdout, 't', 'the promoted standby issues ids above the original');
is($stderr, '', 'a promoted standby does not warn');
ok(!$standby->log_contains(qr/started from a backup/), 'nor does its log');

done_testing();
