# The fleet guard: three servers share one snowflake.fleet list and each recognises itself in it;
# a clone started from a base backup of the first finds the first holding its node pair and, with
# snowflake.on_duplicate_node = refuse, stops generating while the first goes on; once the clone
# is listed too both refuse, until it stops and the first resumes by itself; a member that never
# answers and a clock that libfaketime moves ahead are reported but stop nothing. Problems are
# logged once when they appear and once when they clear.
use strict;
use warnings;
use IO::Select;
use IO::Socket::INET;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use SnowflakeTest;

plan skip_all => 'libfaketime is not installed' unless have_libfaketime();

my $interval_s = 1;

# The three members, each with its own pair; the first can be backed up, the third has a movable
# clock.
my @members = (
    snowflake_node('member1', machine_id => 1, allows_streaming => 1),
    snowflake_node('member2', machine_id => 2),
    snowflake_node('member3', machine_id => 3));
my $clock_file = PostgreSQL::Test::Utils::tempdir() . '/member3_clock';

# The fleet list: the connection strings of the given servers and of extra entries.
sub fleet_list {
    return join '; ',
      map { ref $_ ? 'host=' . $_->host . ' port=' . $_->port . ' dbname=postgres' : $_ } @_;
}

for my $member (@members) {
    $member->append_conf('postgresql.conf', qq(
snowflake.fleet_check_interval = $interval_s
snowflake.on_duplicate_node = refuse
snowflake.max_clock_offset = 1000
));
}
$members[0]->start;
$members[1]->start;
start_with_clock($members[2], $clock_file);
my $list = fleet_list(@members);
for my $member (@members) {
    $member->safe_psql('postgres', 'CREATE EXTENSION snowflake');
    set_and_reload($member, 'snowflake.fleet', $list);
}

# Waits until a check that started after this call has completed, and returns the summary then:
# the first check to end after the call may have started before it, the one after that did not.
sub next_check {
    my ($node) = @_;
    my $checked_at = q(SELECT coalesce(checked_at, '-infinity') FROM snowflake_fleet_summary());
    my $before = $node->safe_psql('postgres', $checked_at);
    for my $round ('a check', 'a check that started after the call') {
        $node->poll_query_until('postgres',
            "SELECT checked_at > '$before'::timestamptz FROM snowflake_fleet_summary()")
          or die "the fleet guard did not end $round";
        $before = $node->safe_psql('postgres', $checked_at);
    }
    return $node->safe_psql('postgres',
        'SELECT members, members_with_problems, refusing FROM snowflake_fleet_summary()');
}

sub status_of {
    my ($node) = @_;
    return $node->safe_psql('postgres',
        q(SELECT string_agg(concat_ws(',', self, datacenter_id, machine_id, problem), E'\n'
                            ORDER BY member) FROM snowflake_fleet_status()));
}

sub generates {
    my ($node) = @_;
    my ($ret) = $node->psql('postgres', 'SELECT snowflake_nextval()');
    return $ret == 0;
}

# Healthy: each lists all three, recognises exactly itself, and finds no problem.
for my $i (0 .. 2) {
    my $member = $members[$i];
    is(next_check($member), '3|0|f', "member " . ($i + 1) . ": three members, no problem");
    is($member->safe_psql('postgres',
            'SELECT machine_id FROM snowflake_fleet_status() WHERE self'),
        $i + 1, 'member ' . ($i + 1) . ' recognises itself by its instance token');
    ok(generates($member), 'member ' . ($i + 1) . ' generates');
}
# A password in the list is refused, since PostgreSQL logs a changed setting's value; the error
# does not show it.
my $refused = error_of($members[0],
    q(ALTER SYSTEM SET snowflake.fleet = 'host=127.0.0.1 port=1 password=hunter2'));
like($refused, qr/22023.*carries a password.*passfile/s, 'a password in the list is refused');
unlike($refused, qr/hunter2/, 'and not shown');

# The list may carry passwords: a role that is not a superuser cannot read it.
$members[0]->safe_psql('postgres', 'CREATE ROLE watcher');
like(error_of($members[0], 'SET ROLE watcher; SHOW snowflake.fleet'), qr/42501/,
    'only a superuser reads snowflake.fleet');
like(error_of($members[0], 'SET ROLE watcher; SELECT * FROM snowflake_fleet_status()'),
    qr/42501/, 'snowflake_fleet_status() is not granted to PUBLIC');
isnt($members[0]->safe_psql('postgres', 'SHOW snowflake.instance_token'),
    $members[1]->safe_psql('postgres', 'SHOW snowflake.instance_token'),
    'every server draws its own instance token');

# A clone from a base backup of member 1, on another port with member 1's configuration: the
# fleet list names member 1, not the clone.
$members[0]->backup('clone_backup');
my $clone = PostgreSQL::Test::Cluster->new('clone');
$clone->init_from_backup($members[0], 'clone_backup');
my $clone_started = time;
$clone->start;
$clone->poll_query_until('postgres',
    'SELECT refusing FROM snowflake_fleet_summary()')
  or die 'the clone never found member 1 holding its pair';
my $detected_after = time - $clone_started;
my $error = error_of($clone, 'SELECT snowflake_nextval()');
like($error, qr/55000/, 'the clone refuses with 55000');
like($error, qr/node pair \(1, 1\) is also held by live fleet member .*port=${\ $members[0]->port}/,
    'the message names member 1');
like($error, qr/HINT:.*resumes by itself/s, 'the hint gives the way out');
like(status_of($clone), qr/holds this server's node pair \(1, 1\)/,
    'the clone shows member 1 holding its pair');
ok(generates($members[0]), 'member 1 goes on generating, as it does not list the clone');
note(sprintf('the clone refused %.1f s after its start (interval %d s)',
    $detected_after, $interval_s));

# The clone listed on every server: member 1 sees it too and both refuse; the others see two
# members with one pair.
$list = fleet_list(@members, $clone);
my $listed_at = time;
set_and_reload($_, 'snowflake.fleet', $list) for @members, $clone;
$members[0]->poll_query_until('postgres', 'SELECT refusing FROM snowflake_fleet_summary()')
  or die 'member 1 never found the clone';
note(sprintf('member 1 refused %.1f s after the clone was added to the lists', time - $listed_at));
like(error_of($members[0], 'SELECT snowflake_nextval()'),
    qr/55000.*also held by live fleet member .*port=${\ $clone->port}/s,
    'member 1 refuses while the clone is up, naming it');
ok(!generates($clone), 'the clone still refuses');
set_and_reload($members[0], 'snowflake.on_duplicate_node', 'warn');
ok(generates($members[0]), 'with on_duplicate_node = warn member 1 generates at once');
set_and_reload($members[0], 'snowflake.on_duplicate_node', 'refuse');
ok(!generates($members[0]), 'and with refuse it refuses again at once');
next_check($members[1]);
like(status_of($members[1]), qr/same node pair as member/,
    'member 2 sees two members holding one pair');
ok(generates($members[1]), 'member 2 goes on generating');

# The clone stops: member 1 resumes by itself at the next check.
$clone->stop;
$members[0]->poll_query_until('postgres', 'SELECT NOT refusing FROM snowflake_fleet_summary()')
  or die 'member 1 never resumed';
ok(generates($members[0]), 'member 1 resumes once the clone is gone');
# The check that lifted the fence may have begun while the clone was shutting down, and found it
# silent rather than gone; a check begun after the stop finds it unreachable.
next_check($members[0]);
like(status_of($members[0]), qr/unreachable/, 'the stopped clone is reported unreachable');

# A member that accepts connections and never answers: reported, and nothing stops.
# Its backlog of 1 fills at once, after which connects stay under way until each check's time
# limit ends them.
my $silent = IO::Socket::INET->new(
    LocalAddr => '127.0.0.1', LocalPort => 0, Proto => 'tcp', Listen => 1, ReuseAddr => 1)
  or die "listener: $!";
$list = fleet_list(@members, 'host=127.0.0.1 port=' . $silent->sockport . ' dbname=postgres');
set_and_reload($_, 'snowflake.fleet', $list) for @members;
next_check($members[1]);
next_check($members[1]) for 1 .. 3;
like(status_of($members[1]), qr/did not answer within 1000 ms/,
    'a member that never answers is reported, at every check');
ok(generates($members[1]), 'and stops nothing');

# Member 3's clock moves 5 s ahead: the others warn, and nothing stops.
set_clock_offset($clock_file, '+5');
next_check($members[0]);
like(status_of($members[0]), qr/,1,3,clock off by [45]\d\d\d ms \(snowflake.max_clock_offset is 1000 ms\)/,
    'member 1 reports the clock of member 3');
ok(generates($members[0]), 'a clock too far off stops nothing');

# Each problem was logged once when it appeared and once when it cleared, not at every check.
my $log = slurp_file($members[0]->logfile);
my @fenced = $log =~ /fleet guard: member [^\n]* holds this server's node pair$/mg;
my @resumed = $log =~ /no other member holds this server's node pair any more/g;
is(scalar @fenced, 1, 'member 1 logged the duplicate once');
is(scalar @resumed, 1, 'and its end once');
my @clock = $log =~ /member \d+ \([^)]*\): clock off by/g;
is(scalar @clock, 1, 'member 1 logged the clock of member 3 once');

# What a check of 10 answering members costs the worker: the three members listed again and
# again, which the guard tells from servers sharing a pair by their tokens.
set_clock_offset($clock_file, '+0');
$list = fleet_list(map { $members[ $_ % 3 ] } 0 .. 9);
set_and_reload($members[1], 'snowflake.fleet', $list);
next_check($members[1]);
# The process id of a server's fleet guard, or '' while it is not running: the worker is attached
# to no database, and pg_stat_activity shows it.
sub guard_pid {
    my ($node) = @_;
    return $node->safe_psql('postgres',
        q(SELECT pid FROM pg_stat_activity WHERE backend_type = 'snowflake fleet guard'));
}
# Whether the member's guard comes to wait on the given wait event.
sub guard_waits_on {
    my ($member, $wait_event) = @_;
    return $member->poll_query_until('postgres',
        "SELECT wait_event = '$wait_event' FROM pg_stat_activity "
          . "WHERE backend_type = 'snowflake fleet guard'");
}

my $worker = guard_pid($members[1]);
ok($worker, 'pg_stat_activity shows the fleet guard');
# The wait events that name the extension's waits exist from PostgreSQL 17 on; before, every one
# shows as Extension.
my $named_waits = $members[1]->safe_psql('postgres', 'SHOW server_version_num') >= 170000;
SKIP: {
    skip 'PostgreSQL before 17 has no custom wait events', 1 unless $named_waits;
    ok(guard_waits_on($members[1], 'SnowflakeFleetSleep'),
        'between checks the guard waits on SnowflakeFleetSleep');
}
# The worker's CPU time, which pg_stat_activity does not show: the one read of /proc left.
my $cpu_ns = sub { (split ' ', slurp_file("/proc/$worker/schedstat"))[0] };
my $checks = 5;
my $before_ns = $cpu_ns->();
my $started = time;
next_check($members[1]) for 1 .. $checks;
# next_check waits for a check that starts after it is called, so each call spans up to two.
my $elapsed_s = time - $started;
my $completed = $elapsed_s / $interval_s;
note(sprintf('the worker spent %.1f ms of CPU in %.1f s, about %.0f checks of 10 members: '
      . '%.1f ms per check', ($cpu_ns->() - $before_ns) / 1e6, $elapsed_s, $completed,
    ($cpu_ns->() - $before_ns) / 1e6 / $completed));
is(next_check($members[1]), '10|0|f',
    'the list of 10 members is checked, and one server listed again is no duplicate');

# A worker that dies is started again by the postmaster (after 10 s) and goes on checking.
kill 'TERM', $worker;
ok($members[1]->poll_query_until('postgres',
        q(SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'snowflake fleet guard')
          . " AND pid <> $worker"),
    'the fleet guard is started again after it dies');
is(next_check($members[1]), '10|0|f', 'and checks again');

# The worker takes part in the barriers of a server's processes: a database is dropped while
# member 3's guard checks its silent member every second (DROP DATABASE waits for every process
# attached like a backend, but for none connected to no database).
$members[2]->safe_psql('postgres', 'CREATE DATABASE dropped_while_guarded');
$members[2]->safe_psql('postgres', 'DROP DATABASE dropped_while_guarded');
is($members[2]->safe_psql('postgres',
        q(SELECT count(*) FROM pg_database WHERE datname = 'dropped_while_guarded')),
    '0', 'a database is dropped while the guard runs');

# A server stops at once even while its guard waits for a member that never answers. Member 3's
# clock stands still before its guard begins such a round, so that the round's time limit cannot
# end it: a stop that waited for the round would not end. A listener only member 3 knows says when
# the round has begun (its connection arrives). The first silent member leaves member 3's list
# before, so that no round with it is under way when the clock stops.
my $stop_silent = IO::Socket::INET->new(
    LocalAddr => '127.0.0.1', LocalPort => 0, Proto => 'tcp', Listen => 8, ReuseAddr => 1)
  or die "listener: $!";
set_and_reload($members[2], 'snowflake.fleet', fleet_list(@members));
next_check($members[2]);
freeze_clock($clock_file, int(time * 1000));
set_and_reload($members[2], 'snowflake.fleet',
    fleet_list(@members, 'host=127.0.0.1 port=' . $stop_silent->sockport . ' dbname=postgres'));
IO::Select->new($stop_silent)->can_read($PostgreSQL::Test::Utils::timeout_default)
  or die "member 3's guard never asked the silent member";
my $asking = $stop_silent->accept or die "accept: $!";
SKIP: {
    skip 'PostgreSQL before 17 has no custom wait events', 1 unless $named_waits;
    ok(guard_waits_on($members[2], 'SnowflakePeerAnswer'),
        'while it waits for an answer the guard waits on SnowflakePeerAnswer');
}
ok( $members[2]->stop('fast',
        fail_ok => 1, timeout => $PostgreSQL::Test::Utils::timeout_default),
    'member 3 stopped while its guard waited for a silent member, before the time limit');
close $asking;

# Turning the guard off clears what it showed and fences nothing.
set_and_reload($members[0], 'snowflake.fleet_check_interval', '0');
$members[0]->poll_query_until('postgres', 'SELECT checked_at IS NULL FROM snowflake_fleet_summary()')
  or die 'the guard did not turn off';
ok(generates($members[0]), 'with the guard off generation goes on');

done_testing();
