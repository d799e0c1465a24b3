# The clock of a running server stepped back and forward with libfaketime: refusals carry the gap
# and change nothing, a wait bound turns refusals into waits, waits can be cancelled, a forward
# step only leaves a gap, a stopped clock allows exactly 4,096 ids, and a clock past 2080 is
# refused.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;

plan skip_all => 'libfaketime is not installed' unless have_libfaketime();

my $clock_file = "$PostgreSQL::Test::Utils::tmp_check/clock_offset_003";
my $node = snowflake_node('clock', datacenter_id => 1, machine_id => 2);
start_with_clock($node, $clock_file);
$node->safe_psql('postgres', q(
CREATE EXTENSION snowflake;
CREATE TABLE issued (id bigint PRIMARY KEY);
INSERT INTO issued SELECT snowflake_nextval() FROM generate_series(1, 1000);
));

sub info {
    return $node->safe_psql('postgres',
        'SELECT last_timestamp, ids_generated, clock_rollbacks FROM snowflake_info()');
}

sub set_rollback_wait {
    set_and_reload($node, 'snowflake.max_clock_rollback_wait', $_[0]);
}

# Inserts one id and returns it; dies on error so the caller sees the failure.
sub insert_id {
    return $node->safe_psql('postgres',
        'INSERT INTO issued VALUES (snowflake_nextval()) RETURNING id');
}

my $max_before = $node->safe_psql('postgres', 'SELECT max(id) FROM issued');

# A step back beyond the wait bound: refused at once with the gap and the refuse-until time. The
# clock stands 5 s behind the last id, so the gap is exactly that, however long the steps before
# took.
freeze_clock($clock_file, unix_ms_of($max_before) - 5000);
my $state_before = info();
my $err = error_of($node, 'SELECT snowflake_nextval()');
like($err, qr/ERROR:  58000: clock moved backwards by (\d+) ms/, 'with SQLSTATE 58000');
my ($gap) = $err =~ /clock moved backwards by (\d+) ms/;
# libfaketime reads the frozen instant as a floating-point number of seconds, which may land a
# millisecond short.
ok(defined $gap && abs($gap - 5000) <= 1, "the message gives the gap (${\($gap // '?')} ms)");
like($err, qr/DETAIL:  .*generation is refused until the clock reaches \d{4}-\d\d-\d\d [\d:.]+/,
    'the detail says until when generation is refused');
my $state_after = info();
my ($last_before, $count_before, $rollbacks_before) = split /\|/, $state_before;
my ($last_after, $count_after, $rollbacks_after) = split /\|/, $state_after;
is($last_after, $last_before, 'the refused call left the last timestamp as it was');
is($count_after, $count_before, 'and issued nothing');
cmp_ok($rollbacks_after, '>', $rollbacks_before, 'the rollback was counted');

# A wait bound larger than the step: the call waits for the clock and then succeeds.
set_rollback_wait('10s');
set_clock_offset($clock_file, offset_behind($max_before, 5));
my $after_wait = insert_id();
cmp_ok($after_wait, '>', $max_before, 'after waiting out the step the id is above all before');

# The wait is cancellable: statement_timeout ends it, and the state stays as it was. The clock runs
# 50 s behind the last id, within the bound: the wait would last about that long, and
# statement_timeout ends it after 1 s.
set_rollback_wait('1min');
set_clock_offset($clock_file, offset_behind($after_wait, 50));
$state_before = info();
(undef, undef, $err) = $node->psql('postgres',
    "SET statement_timeout = '1s'; SELECT snowflake_nextval()");
like($err, qr/canceling statement due to statement timeout/, 'statement_timeout cancels the wait');
is((split /\|/, info())[0], (split /\|/, $state_before)[0], 'the cancelled call changed nothing');
set_rollback_wait('0');

# A forward step of a minute leaves a gap in the timeline and nothing else.
set_clock_offset($clock_file, '+0');
my $before_jump = $node->safe_psql('postgres', 'SELECT max(id) FROM issued');
set_clock_offset($clock_file, '+60');
my $after_jump = insert_id();
cmp_ok(
    $node->safe_psql(
        'postgres',
        "SELECT extract(epoch FROM snowflake_timestamp($after_jump) - snowflake_timestamp($before_jump))"),
    '>=', 55, 'a forward step leaves a gap of about the step');
is($node->safe_psql('postgres', "SELECT snowflake_sequence($after_jump)"),
    '0', 'the sequence restarts in the new millisecond');

# Back to the real clock: now a minute behind the ids issued, so refused; once the clock passes
# the last timestamp again, generation resumes above every id issued.
set_clock_offset($clock_file, '+0');
(undef, undef, $err) = $node->psql('postgres', 'SELECT snowflake_nextval()');
like($err, qr/clock moved backwards by \d+ ms/, 'stepping back from the jump is refused');
set_clock_offset($clock_file, '+62');
my $resumed = insert_id();
cmp_ok($resumed, '>', $after_jump, 'generation resumes once the clock passes the last timestamp');

is($node->safe_psql('postgres', 'SELECT count(*) = count(DISTINCT id) FROM issued'),
    't', 'no id was issued twice');

# A stopped clock (a future instant, frozen): exactly 4,096 ids, then the busy wait for the next
# millisecond, which a query cancel ends. (statement_timeout cannot fire under a stopped clock.)
set_clock_offset($clock_file, '2030-01-01 00:00:00');
my $waits_before = $node->safe_psql('postgres', 'SELECT sequence_waits FROM snowflake_info()');
$node->safe_psql('postgres',
    'INSERT INTO issued SELECT snowflake_nextval() FROM generate_series(1, 4096)');
my $log_offset = -s $node->logfile;
my $stuck = start_statement($node, 'postgres',
    'INSERT INTO issued SELECT snowflake_nextval() FROM generate_series(1, 10)');
my $waiting = q(FROM pg_stat_activity
WHERE query LIKE 'INSERT INTO issued SELECT snowflake_nextval() FROM generate_series(1, 10)%'
  AND state = 'active');
$node->poll_query_until('postgres', "SELECT pg_cancel_backend(pid) $waiting")
  or die 'the waiting statement was not found';
$node->poll_query_until('postgres', "SELECT count(*) = 0 $waiting")
  or die 'the cancelled statement is still running';
ok($node->log_contains(qr/ERROR:  canceling statement due to user request\n[^\n]*STATEMENT:  INSERT INTO issued SELECT snowflake_nextval\(\) FROM generate_series\(1, 10\)/,
        $log_offset),
    'a query cancel ends the wait for the next millisecond');
# The cancel made its psql stop (it stops at the first error); it is only waited for.
eval { $stuck->quit };
is( $node->safe_psql('postgres',
        q(SELECT count(*) FROM issued WHERE snowflake_timestamp(id) = '2030-01-01 00:00:00+00')),
    '4096', 'a stopped clock gives exactly 4,096 ids');
cmp_ok($node->safe_psql('postgres', 'SELECT sequence_waits FROM snowflake_info()'),
    '>', $waits_before, 'the wait was counted');

# Past the 41-bit timestamp field, and before the epoch: 22003.
for my $instant ('@2081-01-01 00:00:00', '@2009-01-01 00:00:00') {
    set_clock_offset($clock_file, $instant);
    $err = error_of($node, 'SELECT snowflake_nextval()');
    like($err, qr/ERROR:  22003: the clock reads -?\d+ Unix ms, outside the Snowflake timestamp range/,
        "a clock at $instant is refused with 22003");
}
$node->stop;
done_testing();
