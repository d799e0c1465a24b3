# The fleet guard's rounds with members that never answer listed first: the
# members are asked all at once, so a round takes one member's time limit however many are
# silent; with snowflake.on_duplicate_node = refuse a newly started server issues no id before its
# first round has ended, and that wait obeys statement_timeout; an answer that shows a live
# duplicate fences at once, mid-round. So a clone started beside its original, both generating,
# issues no id the original issued. A worker that is not running makes nextval refuse, not wait
# forever. The original's clock stands still where a time limit must not run out before the test
# has seen what happens meanwhile, and moves on where it must.
use strict;
use warnings;
use IO::Socket::INET;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use SnowflakeTest;

plan skip_all => 'libfaketime is not installed' unless have_libfaketime();

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
my $clock_file = "$PostgreSQL::Test::Utils::tmp_check/clock_offset_020";
start_with_clock($original, $clock_file);
$original->safe_psql('postgres', 'CREATE EXTENSION snowflake; CREATE ROLE plain');
$original->safe_psql('postgres', 'CREATE TABLE original_ids (id bigint); CREATE TABLE clone_ids (id bigint)');
$original->backup('clone_backup');

# Restarts the original with its clock standing at the real time, and returns that instant in Unix
# ms: its guard's first round cannot end, nor a dead worker be started again, until the clock
# moves.
sub restart_with_clock_stopped {
    $original->stop;
    my $stopped_at = int(time * 1000);
    freeze_clock($clock_file, $stopped_at);
    start_with_clock($original, $clock_file);
    return $stopped_at;
}

# Starts a call of snowflake_nextval() in a session of its own that stays after an error, and
# returns the session once the call has begun.
sub start_call {
    my ($setup) = @_;
    my $call = $original->background_psql('postgres', on_error_stop => 0);
    $call->query_until(qr/started\n/, "\\echo started\n$setup\nSELECT snowflake_nextval();\n");
    $original->poll_query_until('postgres',
        q(SELECT count(*) = 1 FROM pg_stat_activity WHERE query LIKE 'SELECT snowflake_nextval()%'))
      or die 'the call did not begin';
    return $call;
}

# Waits for the call that start_call began to end and returns what it wrote to stderr.
sub finish_call {
    my ($call) = @_;
    $call->query('\echo finished');
    my $errors = $call->{stderr};
    $call->quit;
    return $errors;
}

# A fresh start: the first round has not ended, so nextval waits, and a plain role's own
# statement_timeout ends the wait. With the clock standing, the round cannot end first; once the
# call has begun, the clock moves a second on, past its statement_timeout and short of the
# members' time limit.
my $started_at = restart_with_clock_stopped();
my $call = start_call("SET ROLE plain;\nSET statement_timeout = '300ms';");
freeze_clock($clock_file, $started_at + 1000);
like(finish_call($call), qr/canceling statement due to statement timeout/,
    'before the first round has ended nextval waits, and statement_timeout ends the wait');
# Nor can a plain role turn the guard's refusal off for its session, or read what it found.
like(error_of($original, 'SET ROLE plain; SET snowflake.on_duplicate_node = warn'),
    qr/55P02/, 'a plain role cannot switch on_duplicate_node in its session');
like(error_of($original, 'SET ROLE plain; SELECT * FROM snowflake_fleet_summary()'),
    qr/42501/, 'snowflake_fleet_summary() is not granted to PUBLIC');
# With the clock 5.5 s past the start, the three silent members' limits have run out if they
# were asked at once; asked one after another, the second would have its own limit from the end of
# the first one's, and the round could not end.
freeze_clock($clock_file, $started_at + 5500);
$original->poll_query_until('postgres',
    'SELECT checked_at IS NOT NULL FROM snowflake_fleet_summary()')
  or die 'the first round never ended';
my $round_s = $original->safe_psql('postgres',
    'SELECT extract(epoch FROM checked_at - pg_postmaster_start_time()) FROM snowflake_fleet_summary()');
note(sprintf('the first round of the original ended %.1f s after its start', $round_s));
cmp_ok($round_s, '<', 2 * $member_limit_s,
    'three silent members take one member time limit together, not three');
like($original->safe_psql('postgres',
        q(SELECT string_agg(problem, E'\n') FROM snowflake_fleet_status())),
    qr/did not answer within 5000 ms/, 'the silent members are reported');
set_clock_offset($clock_file, '+0');

# The original generates, committing every batch, while the clone starts and tries to, until the
# clone has tried after its first round.
$original->safe_psql('postgres',
    'CREATE TABLE keep_generating (go boolean); INSERT INTO keep_generating VALUES (true)');
my $generator = $original->background_psql('postgres');
$generator->query_until(qr/started\n/, q(\echo started
DO $$
BEGIN
    WHILE EXISTS (SELECT FROM keep_generating) LOOP
        INSERT INTO original_ids SELECT snowflake_nextval() FROM generate_series(1, 20);
        COMMIT;
        PERFORM pg_sleep(0.0005);
    END LOOP;
END
$$;
));
$clone->init_from_backup($original, 'clone_backup');
$clone->start;
# Batches from the clone's start on, the last one begun after its first round had ended.
my ($issued, $refused, $refusal) = (0, 0, '');
my $give_up = time + $PostgreSQL::Test::Utils::timeout_default;
my $round_over = 0;
until ($round_over) {
    die "the clone's first round never ended" if time > $give_up;
    $round_over = $clone->safe_psql('postgres',
        'SELECT checked_at IS NOT NULL FROM snowflake_fleet_summary()') eq 't';
    my ($ret, $stdout, $stderr) = $clone->psql('postgres',
        'INSERT INTO clone_ids SELECT snowflake_nextval() FROM generate_series(1, 200)');
    if ($ret == 0) {
        $issued++;
    } else {
        $refused++;
        $refusal = $stderr;
    }
}
$original->safe_psql('postgres', 'DELETE FROM keep_generating');
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
like($clone->safe_psql('postgres',
        q(SELECT string_agg(problem, E'\n') FROM snowflake_fleet_status())),
    qr/holds this server's node pair \(1, 1\)/, 'the clone shows its original holding its pair');

$clone->stop;

# A worker that is not running does not leave nextval waiting: the guard dies at the start of
# the first round (the postmaster starts it again after 10 s), and nextval refuses once the
# round's time limit and a second have passed. The clock stands until the call has begun, then
# moves 7 s on: past that, short of the worker's start.
# pg_stat_activity shows the worker once it is attached, at the start of its first round.
sub guard_pid {
    my ($node) = @_;
    my $guard = q(FROM pg_stat_activity WHERE backend_type = 'snowflake fleet guard');
    $node->poll_query_until('postgres', "SELECT count(*) = 1 $guard")
      or die 'no fleet guard';
    return $node->safe_psql('postgres', "SELECT pid $guard");
}
$started_at = restart_with_clock_stopped();
my $worker = guard_pid($original);
kill 'TERM', $worker;
$call = start_call('\set VERBOSITY verbose');
freeze_clock($clock_file, $started_at + 7000);
my $error = finish_call($call);
like($error, qr/55000: the fleet guard's first check since the server started has not finished/,
    'with the worker gone nextval refuses, not waits forever');
like($error, qr/HINT:.*not running.*on_duplicate_node = warn/s, 'the hint gives the ways out');
set_clock_offset($clock_file, '+0');
$original->poll_query_until('postgres',
    'SELECT checked_at IS NOT NULL FROM snowflake_fleet_summary()')
  or die 'the restarted worker never checked';
is($original->safe_psql('postgres', 'SELECT snowflake_nextval() > 0'), 't',
    'the restarted worker ends its first round, and nextval issues ids');

$original->stop;
done_testing();
