# The fleet guard's rounds with members that never answer listed first: the
# members are asked all at once, so a round takes one member's time limit however many are
# silent; with snowflake.on_duplicate_node = refuse a newly started server issues no id before its
# first round has ended, and that wait obeys statement_timeout; an answer that shows a live
# duplicate fences at once, mid-round. So a clone started beside its original, both generating,
# issues no id the original issued. A worker that is not running makes nextval refuse, not wait
# forever.
use strict;
use warnings;
use IO::Socket::INET;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use SnowflakeTest;

# The guard's time limit per member with the default interval of 60 s (README "Fleet guard").
my $member_limit_s = 5;

# Three members that accept connections and never answer: a backlog of 1 that nobody accepts, so
# the first connections wait in it for a startup reply and later ones for a handshake.
my @silent = map {
    IO::Socket::INET->new(
        LocalAddr => '127.0.0.1', LocalPort => 0, Proto => 'tcp', Listen => 1, ReuseAddr => 1)
      or die "listener: $!"
} 1 .. 3;

my $original = snowflake_node('original', allows_streaming => 1);
# Created now for its port, which the fleet list names; started from a backup later.
my $clone = PostgreSQL::Test::Cluster->new('clone');
my $list = join '; ',
  (map { 'host=127.0.0.1 port=' . $_->sockport . ' dbname=postgres' } @silent),
  (map { 'host=' . $_->host . ' port=' . $_->port . ' dbname=postgres' } $original, $clone);
$original->append_conf('postgresql.conf', qq(
snowflake.fleet = '$list'
snowflake.on_duplicate_node = refuse
));
$original->start;
$original->safe_psql('postgres', 'CREATE EXTENSION snowflake; CREATE ROLE plain');
$original->safe_psql('postgres', 'CREATE TABLE original_ids (id bigint); CREATE TABLE clone_ids (id bigint)');
$original->backup('clone_backup');

# A fresh start: the first round has not ended, so nextval waits, and a plain role's own
# statement_timeout ends the wait.
$original->restart;
my ($ret, $stdout, $stderr) = $original->psql('postgres',
    "SET ROLE plain; SET statement_timeout = '300ms'; SELECT snowflake_nextval()");
like($stderr, qr/canceling statement due to statement timeout/,
    'before the first round has ended nextval waits, and statement_timeout ends the wait');
# Nor can a plain role turn the guard's refusal off for its session, or read what it found.
like(error_of($original, 'SET ROLE plain; SET snowflake.on_duplicate_node = warn'),
    qr/55P02/, 'a plain role cannot switch on_duplicate_node in its session');
like(error_of($original, 'SET ROLE plain; SELECT * FROM snowflake_fleet_summary()'),
    qr/42501/, 'snowflake_fleet_summary() is not granted to PUBLIC');
$original->poll_query_until('postgres',
    'SELECT checked_at IS NOT NULL FROM snowflake_fleet_summary()')
  or die 'the first round never ended';
my $round_s = $original->safe_psql('postgres',
    'SELECT extract(epoch FROM checked_at - pg_postmaster_start_time()) FROM snowflake_fleet_summary()');
note(sprintf('the first round of the original ended %.1f s after its start', $round_s));
# One after another, three silent members take three limits; together they take one.
cmp_ok($round_s, '<', 2 * $member_limit_s,
    'three silent members take one member time limit together, not three');
like($original->safe_psql('postgres',
        q(SELECT string_agg(problem, E'\n') FROM snowflake_fleet_status())),
    qr/did not answer within 5000 ms/, 'the silent members are reported');

# The original generates, committing every batch, while the clone starts and tries to.
my $generating_s = 4 * $member_limit_s;
my $generator = $original->background_psql('postgres');
$generator->query_until(qr/started\n/, qq(\\echo started
DO \$\$
DECLARE deadline timestamptz := clock_timestamp() + interval '$generating_s s';
BEGIN
    WHILE clock_timestamp() < deadline LOOP
        INSERT INTO original_ids SELECT snowflake_nextval() FROM generate_series(1, 20);
        COMMIT;
        PERFORM pg_sleep(0.0005);
    END LOOP;
END
\$\$;
));
$clone->init_from_backup($original, 'clone_backup');
my $clone_started = time;
$clone->start;
my ($issued, $refused, $refusal) = (0, 0, '');
while (time - $clone_started < 2 * $member_limit_s) {
    my ($ret, $stdout, $stderr) = $clone->psql('postgres',
        'INSERT INTO clone_ids SELECT snowflake_nextval() FROM generate_series(1, 200)');
    if ($ret == 0) {
        $issued++;
    } else {
        $refused++;
        $refusal = $stderr;
    }
}
$generator->quit;
note("the clone's batches: $issued issued, $refused refused");
is($issued, 0, 'the clone issues no id while its original is up');
like($refusal, qr/node pair \(1, 1\) is also held by live fleet member .*port=${\ $original->port}/,
    'the clone refuses naming its original');

# Every id of both, compared.
my %original_ids = map { $_ => 1 }
  split /\n/, $original->safe_psql('postgres', 'SELECT id FROM original_ids');
cmp_ok(scalar keys %original_ids, '>', 0, 'the original generated all along');
my @both = grep { $original_ids{$_} }
  split /\n/, $clone->safe_psql('postgres', 'SELECT id FROM clone_ids');
is(scalar @both, 0, 'the clone issued no id that the original issued');

# The clone's fence came from its original's answer, mid-round: its status, once the round has
# ended, shows the original holding its pair and the silent members timed out.
$clone->poll_query_until('postgres', 'SELECT checked_at IS NOT NULL FROM snowflake_fleet_summary()')
  or die "the clone's first round never ended";
like($clone->safe_psql('postgres',
        q(SELECT string_agg(problem, E'\n') FROM snowflake_fleet_status())),
    qr/holds this server's node pair \(1, 1\)/, 'the clone shows its original holding its pair');

$clone->stop;

# A worker that is not running does not leave nextval waiting: the guard dies at the start of
# the first round (the postmaster starts it again after 10 s), and nextval refuses once the
# round's time limit and a second have passed.
# pg_stat_activity shows the worker once it is attached, at the start of its first round.
sub guard_pid {
    my ($node) = @_;
    my $guard = q(FROM pg_stat_activity WHERE backend_type = 'snowflake fleet guard');
    $node->poll_query_until('postgres', "SELECT count(*) = 1 $guard")
      or die 'no fleet guard';
    return $node->safe_psql('postgres', "SELECT pid $guard");
}
$original->restart;
my $worker = guard_pid($original);
kill 'TERM', $worker;
my $error = error_of($original, 'SELECT snowflake_nextval()');
like($error, qr/55000: the fleet guard's first check since the server started has not finished/,
    'with the worker gone nextval refuses, not waits forever');
like($error, qr/HINT:.*not running.*on_duplicate_node = warn/s, 'the hint gives the ways out');
$original->poll_query_until('postgres',
    'SELECT checked_at IS NOT NULL FROM snowflake_fleet_summary()')
  or die 'the restarted worker never checked';
is($original->safe_psql('postgres', 'SELECT snowflake_nextval() > 0'), 't',
    'the restarted worker ends its first round, and nextval issues ids');

$original->stop;
done_testing();
