# The clock of a running server stepped back and forward with libfaketime: refusals carry the gap
# and change nothing, a wait bound turns refusals into waits, waits can be cancelled, and a
# forward step only leaves a gap.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $libfaketime = '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1';
plan skip_all => "libfaketime not found at $libfaketime" unless -e $libfaketime;

# The server's clock is the real one plus the offset in this file, re-read on every call.
my $clock_file = "$PostgreSQL::Test::Utils::tmp_check/clock_offset_003";
# Replaced by rename, so that the server never reads a missing or half-written file.
sub set_clock_offset {
    unlink "$clock_file.new";
    PostgreSQL::Test::Utils::append_to_file("$clock_file.new", "$_[0]\n");
    rename("$clock_file.new", $clock_file) or die "rename: $!";
}

my $node = PostgreSQL::Test::Cluster->new('clock');
$node->init;
$node->append_conf('postgresql.conf', qq(
shared_preload_libraries = 'snowflake'
snowflake.datacenter_id = 1
snowflake.machine_id = 2
));
set_clock_offset('+0');
{
    local $ENV{LD_PRELOAD} = $libfaketime;
    local $ENV{FAKETIME_TIMESTAMP_FILE} = $clock_file;
    local $ENV{FAKETIME_NO_CACHE} = '1';
    local $ENV{FAKETIME_DONT_FAKE_MONOTONIC} = '1';
    $node->start;
}
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
    $node->safe_psql('postgres', "ALTER SYSTEM SET snowflake.max_clock_rollback_wait = '$_[0]'");
    $node->reload;
}

# Inserts one id and returns it; dies on error so the caller sees the failure.
sub insert_id {
    return $node->safe_psql('postgres',
        'INSERT INTO issued VALUES (snowflake_nextval()) RETURNING id');
}

my $max_before = $node->safe_psql('postgres', 'SELECT max(id) FROM issued');

# A step back beyond the wait bound: refused at once with the gap and the refuse-until time.
set_clock_offset('-5');
my $state_before = info();
my ($ret, $out, $err) = $node->psql('postgres', "\\set VERBOSITY verbose\nSELECT snowflake_nextval()");
isnt($ret, 0, 'a clock 5 s behind is refused');
like($err, qr/ERROR:  58000: clock moved backwards by (\d+) ms/, 'with SQLSTATE 58000');
my ($gap) = $err =~ /clock moved backwards by (\d+) ms/;
ok(defined $gap && $gap >= 4000 && $gap <= 6000, "the message gives the gap (${\($gap // '?')} ms)");
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
my $after_wait = insert_id();
cmp_ok($after_wait, '>', $max_before, 'after waiting out the step the id is above all before');

# The wait is cancellable: statement_timeout ends it, and the state stays as it was.
set_rollback_wait('60s');
set_clock_offset('-35');
$state_before = info();
($ret, $out, $err) = $node->psql('postgres',
    "SET statement_timeout = '1s'; SELECT snowflake_nextval()");
like($err, qr/canceling statement due to statement timeout/, 'statement_timeout cancels the wait');
is((split /\|/, info())[0], (split /\|/, $state_before)[0], 'the cancelled call changed nothing');
set_rollback_wait('0');

# A forward step of a minute leaves a gap in the timeline and nothing else.
set_clock_offset('+0');
my $before_jump = $node->safe_psql('postgres', 'SELECT max(id) FROM issued');
set_clock_offset('+60');
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
set_clock_offset('+0');
($ret, $out, $err) = $node->psql('postgres', 'SELECT snowflake_nextval()');
like($err, qr/clock moved backwards by \d+ ms/, 'stepping back from the jump is refused');
set_clock_offset('+62');
my $resumed = insert_id();
cmp_ok($resumed, '>', $after_jump, 'generation resumes once the clock passes the last timestamp');

is($node->safe_psql('postgres', 'SELECT count(*) = count(DISTINCT id) FROM issued'),
    't', 'no id was issued twice');
$node->stop;
done_testing();
