# The mark file cannot be written while ids are generated: the data directory made read-only, the
# file replaced by a directory, a full disk and an fsync error (the last two injected by
# test/faults/mark_faults.c, which fails only the mark file's calls). Generation stops with an error that says what to do before
# any id past the current mark is issued, nothing issued before is repeated, and it resumes by
# itself, without a restart, once the fault is fixed. On a standby, a mark that replay cannot write
# stops the standby with the record named; once fixed, it starts and replays on.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use SnowflakeTest;

my $node = snowflake_node('storage', allows_streaming => 1, datacenter_id => 13, machine_id => 2);
$node->append_conf('postgresql.conf', "fsync = on\n");
start_with_mark_faults($node);
$node->safe_psql('postgres', q(
CREATE EXTENSION snowflake;
CREATE TABLE issued (id bigint PRIMARY KEY);
));
my $data_dir = $node->data_dir;
my $mark_file = "$data_dir/snowflake_mark";

# Generates ids (inserted, so that a repeated one would violate the primary key).
sub generate {
    $node->safe_psql('postgres',
        "INSERT INTO issued SELECT snowflake_nextval() FROM generate_series(1, $_[0])");
}

# Waits until the clock has passed the lease the last id took, so that the next id needs the mark
# moved on.
sub wait_past_lease {
    $node->poll_query_until('postgres',
        q(SELECT clock_timestamp() >= persisted_mark + interval '1 ms' FROM snowflake_info()))
      or die 'the clock did not pass the mark';
}

# With the fault in place and the lease run out, every call fails and issues nothing; once the
# fault is fixed, the next call succeeds above every id before.
sub stops_then_resumes {
    my ($what, $make_fault, $fix_fault, $message) = @_;
    generate(100_000);
    my $max = max_id($node, 'issued');
    my $issued = $node->safe_psql('postgres', 'SELECT ids_generated FROM snowflake_info()');
    $make_fault->();
    wait_past_lease();
    my $error = error_of($node, 'INSERT INTO issued SELECT snowflake_nextval()');
    like($error, $message, "$what: generation stops with an error naming the file");
    like($error,
        qr/HINT:  Fix what keeps the server from writing to its data directory/,
        "$what: the hint says what to do");
    is($node->safe_psql('postgres', 'SELECT ids_generated FROM snowflake_info()'),
        $issued, "$what: no id was issued past the mark");
    # A reader needs no new mark: it gets the bound the mark covers already, with a warning.
    my ($bound_ret, $bound, $bound_err) =
      $node->psql('postgres', 'SELECT snowflake_settled_bound()');
    is($bound_ret, 0, "$what: a bound read still answers");
    like($bound_err, qr/WARNING:  could not .*snowflake mark file/,
        "$what: with a warning that says why the bound stands still");
    $fix_fault->();
    generate(10_000);
    is($node->safe_psql('postgres', "SELECT count(*) FROM issued WHERE id > $max"),
        '10000', "$what: once fixed, generation resumes without a restart, above every id before");
    is($node->safe_psql('postgres', "SELECT count(*) FROM issued WHERE id > $max AND id < $bound"),
        '0', "$what: a bound read meanwhile answered, and every later id is at or above it");
}

stops_then_resumes(
    'a read-only data directory',
    sub { chmod 0500, $data_dir or die "chmod: $!" },
    sub { chmod 0700, $data_dir or die "chmod: $!" },
    qr/ERROR:  42501: could not create snowflake mark file "snowflake_mark.tmp": Permission denied/);

stops_then_resumes(
    'a directory in place of the file',
    sub { unlink $mark_file or die "unlink: $!"; mkdir $mark_file or die "mkdir: $!" },
    sub { rmdir $mark_file or die "rmdir: $!" },
    qr/ERROR:  42809: could not put snowflake mark file "snowflake_mark" in place/);

stops_then_resumes(
    'a full disk',
    sub { inject_mark_fault('enospc') },
    sub { inject_mark_fault('') },
    qr/ERROR:  53100: could not write snowflake mark file "snowflake_mark.tmp": No space left/);

my $log_offset = -s $node->logfile;
stops_then_resumes(
    'an fsync error',
    sub { inject_mark_fault('eio') },
    sub { inject_mark_fault('') },
    qr/ERROR:  58030: could not put snowflake mark file "snowflake_mark" in place/);
ok($node->log_contains(qr/could not fsync file "snowflake_mark.tmp": Input\/output error/,
        $log_offset),
    "an fsync error: the server log has the system's reason");

is($node->safe_psql('postgres', 'SELECT count(*) - count(DISTINCT id) FROM issued'),
    '0', 'no id was repeated');
ok(-f $mark_file, 'the mark file is written again');

# A standby that cannot write a replayed mark stops rather than replay on with a mark that its
# own restart would forget; its log names the file and the record.
$node->backup('replay_base');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($node, 'replay_base', has_streaming => 1);
mkdir $standby->data_dir . '/snowflake_mark.tmp' or die "mkdir: $!";
$standby->start;
generate(100_000);
wait_past_lease();
generate(100_000);
my $standby_pid_file = $standby->data_dir . '/postmaster.pid';
for (1 .. 10 * $PostgreSQL::Test::Utils::timeout_default) {
    last unless -e $standby_pid_file;
    usleep(100_000);
}
ok(!-e $standby_pid_file, 'the standby stops at a mark it cannot write');
ok($standby->log_contains(
        qr/FATAL:  could not remove snowflake mark file "snowflake_mark.tmp": Is a directory/),
    'its log names the file and the reason');
ok($standby->log_contains(qr/CONTEXT:  WAL redo at \S+ for snowflake\/MARK: mark_unix_ms \d+/),
    'its log names the record being replayed');
# The framework still counts the standby as running; a failing stop settles that.
$standby->stop('fast', fail_ok => 1);
rmdir $standby->data_dir . '/snowflake_mark.tmp' or die "rmdir: $!";
$standby->start;
$node->wait_for_catchup($standby);
my $primary_max = max_id($node, 'issued');
is($standby->safe_psql('postgres',
        "SELECT persisted_mark >= snowflake_timestamp($primary_max) FROM snowflake_info()"),
    't', "once fixed, the standby replays on and its mark covers every id of the primary");

$standby->stop;
$node->stop;
done_testing();
