# Helpers shared by the TAP tests: servers with the extension preloaded, a movable clock through
# libfaketime, and errors read with their SQLSTATE.
package SnowflakeTest;

use strict;
use warnings;
use Exporter 'import';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use POSIX ();
use Time::HiRes qw(usleep);

our @EXPORT = qw(snowflake_node start_with_clock set_clock_offset error_of have_libfaketime
  max_id kill9_and_wait set_and_reload start_statement finish_statement archive_current_wal
  start_with_mark_faults inject_mark_fault offset_behind mark_file_text full_matrix unix_ms_of
  mark_on_disk create_old_mark_function freeze_clock restart_reading_keys restart_keys_unread
  read_keys_now keys_floor_node cancel_run_in_her_sleep);

# Whether a test with a matrix (028, 029, 031) runs it whole: unless SNOWFLAKE_MATRIX=reduced,
# and then still where SNOWFLAKE_MATRIX_FULL names the test's number (.ci/run chooses, so that
# each matrix runs whole on one version).
sub full_matrix {
    my ($number) = @_;
    return 1 if ($ENV{SNOWFLAKE_MATRIX} // 'full') ne 'reduced';
    return grep { $_ eq $number } split ' ', $ENV{SNOWFLAKE_MATRIX_FULL} // '';
}

# Debian's multiarch path of libfaketime, whatever the architecture.
my ($libfaketime) = glob('/usr/lib/*/faketime/libfaketime.so.1');

# Whether the clock tests can run; test/check-all sets SNOWFLAKE_REQUIRE_FAKETIME so that a
# missing library fails the suite instead of skipping those tests quietly.
sub have_libfaketime {
    return 1 if defined $libfaketime && -e $libfaketime;
    BAIL_OUT('libfaketime is required but not installed') if $ENV{SNOWFLAKE_REQUIRE_FAKETIME};
    return 0;
}

# A new server with the extension preloaded and the given node ids; not started. With
# install_path it runs another installed PostgreSQL; init_options go on to its initdb.
sub snowflake_node {
    my ($name, %options) = @_;
    my $node = PostgreSQL::Test::Cluster->new($name,
        $options{install_path} ? (install_path => $options{install_path}) : ());
    $node->init(
        allows_streaming => $options{allows_streaming} // 0,
        has_archiving => $options{has_archiving} // 0,
        %{ $options{init_options} // {} });
    my $datacenter = $options{datacenter_id} // 1;
    my $machine = $options{machine_id} // 1;
    $node->append_conf('postgresql.conf', qq(
shared_preload_libraries = 'snowflake'
snowflake.datacenter_id = $datacenter
snowflake.machine_id = $machine
));
    return $node;
}

# Replaced by rename, so that a server never reads a missing or half-written file.
sub set_clock_offset {
    my ($clock_file, $offset) = @_;
    unlink "$clock_file.new";
    PostgreSQL::Test::Utils::append_to_file("$clock_file.new", "$offset\n");
    rename("$clock_file.new", $clock_file) or die "rename $clock_file: $!";
}

# Stops the clock of a server started by start_with_clock at the given Unix ms, until the next
# set_clock_offset or freeze_clock. The extension's time limits and the postmaster's restart of
# a worker read this clock, so none of them runs out while it stands. PostgreSQL's timeouts
# (statement_timeout, lock_timeout) cannot be held so: libfaketime shows the real clock to a
# timer's signal that lands in a wait.
sub freeze_clock {
    my ($clock_file, $unix_ms) = @_;
    set_clock_offset($clock_file,
        POSIX::strftime('%Y-%m-%d %H:%M:%S', gmtime(POSIX::floor($unix_ms / 1000)))
          . sprintf('.%03d', $unix_ms % 1000));
}

# The clock offset that puts a server's clock the given seconds behind the timestamp of an id,
# whatever time has passed since it was issued.
sub offset_behind {
    my ($id, $seconds) = @_;
    my $unix_ms = ($id >> 22) + 1288834974657;
    return sprintf('%+d', POSIX::floor($unix_ms / 1000 - $seconds - Time::HiRes::time()));
}

# The Unix ms of an id's timestamp field (of a positive id or bound).
sub unix_ms_of {
    my ($id) = @_;
    return ($id >> 22) + 1288834974657;
}

# The mark_unix_ms of a node's mark file as it is on disk, or -1 while there is none.
sub mark_on_disk {
    my ($node) = @_;
    my $file = $node->data_dir . '/snowflake_mark';
    return -1 unless -e $file;
    my ($mark) = slurp_file($file) =~ /^mark_unix_ms=(\d+)$/m;
    return $mark // die "$file holds no mark_unix_ms";
}

# CRC-32C, bit by bit, as the mark file's trailer holds it.
sub crc32c {
    my ($bytes) = @_;
    my $crc = 0xFFFFFFFF;
    for my $byte (unpack('C*', $bytes)) {
        $crc ^= $byte;
        $crc = ($crc >> 1) ^ (0x82F63B78 & -($crc & 1) & 0xFFFFFFFF) for 1 .. 8;
    }
    return $crc ^ 0xFFFFFFFF;
}

# A mark file with a valid checksum around any mark, as the server writes it for the cluster of a
# system identifier and the ids of a node pair, or as releases before 1.10 wrote it with 'v1' in
# its place.
sub mark_file_text {
    my ($mark, $writer, $datacenter, $machine) = @_;
    my $body = $writer eq 'v1'
      ? "snowflake mark v1\nmark_unix_ms=$mark\n"
      : "snowflake mark v2\nsystem_identifier=$writer\ndatacenter_id=$datacenter\n"
      . "machine_id=$machine\nmark_unix_ms=$mark\n";
    return $body . sprintf("crc32c=%08x\n", crc32c($body));
}

# A library preloaded before libfaketime so that background workers of servers before 16 get the
# moved clock too (test/perl/select_passthrough.c says why); built once per test file.
my $select_passthrough;
sub select_passthrough {
    return $select_passthrough if defined $select_passthrough;
    # Named by the test's process: test files run side by side share tmp_check.
    $select_passthrough = "$PostgreSQL::Test::Utils::tmp_check/select_passthrough_$$.so";
    system('cc', '-shared', '-fPIC', '-o', $select_passthrough,
        "$FindBin::RealBin/../perl/select_passthrough.c", '-ldl') == 0
      or BAIL_OUT('test/perl/select_passthrough.c does not build');
    return $select_passthrough;
}

# Starts (or with fail_ok, tries to start) a server whose clock is the real one plus the offset
# in $clock_file, re-read on every clock call. The monotonic clock stays real, so latch waits do.
# libfaketime reads an instant in the file in the server's local time: UTC, so that an instant
# means the same on every machine.
sub start_with_clock {
    my ($node, $clock_file, %params) = @_;
    set_clock_offset($clock_file, '+0') unless -e $clock_file;
    local $ENV{TZ} = 'UTC';
    local $ENV{LD_PRELOAD} = select_passthrough() . " $libfaketime";
    local $ENV{FAKETIME_TIMESTAMP_FILE} = $clock_file;
    local $ENV{FAKETIME_NO_CACHE} = '1';
    local $ENV{FAKETIME_DONT_FAKE_MONOTONIC} = '1';
    return $node->start(%params);
}

# ALTER SYSTEM SET (or, without a value, RESET) and a reload, then waits until a new session
# sees the setting as SHOW prints it: pg_ctl reload returns before the server has read the file.
# A value is given as SHOW prints it ('5s', not '5000').
sub set_and_reload {
    my ($node, $name, $value) = @_;
    $node->safe_psql('postgres',
        defined $value ? "ALTER SYSTEM SET $name = '$value'" : "ALTER SYSTEM RESET $name");
    $node->reload;
    my $shown = $value // $node->safe_psql('postgres',
        "SELECT boot_val FROM pg_settings WHERE name = '$name'");
    $node->poll_query_until('postgres', "SELECT current_setting('$name') = '$shown'")
      or die "the reload did not set $name to $shown";
}

# Runs SQL that must fail and returns psql's verbose error text ("ERROR:  SQLSTATE: ...").
sub error_of {
    my ($node, $sql, $dbname) = @_;
    my ($ret, $stdout, $stderr) = $node->psql($dbname // 'postgres',
        "\\set VERBOSITY verbose\n$sql", on_error_stop => 1);
    isnt($ret, 0, "fails: $sql");
    return $stderr;
}

# Starts a statement in a session of its own and returns the session once it runs, for
# statements that must run at the same time; finish_statement waits for it.
sub start_statement {
    my ($node, $dbname, $sql) = @_;
    my $psql = $node->background_psql($dbname);
    $psql->query_until(qr/started\n/, "\\echo started\n$sql;\n");
    return $psql;
}

# Waits until the statement that start_statement began has finished and returns what it
# printed. It dies, showing the server's message, if the statement failed (psql then stops) or
# wrote anything to stderr, a warning included. Like every background_psql session, the whole
# session must end within the test framework's default timeout.
sub finish_statement {
    my ($psql) = @_;
    my $output = eval { $psql->query_safe('\echo finished') };
    if (!defined $output) {
        # psql stopped at the error; what it wrote before it did is read to its end first.
        eval { $psql->{run}->finish };
        die "statement failed: $psql->{stderr}";
    }
    $psql->quit;
    $output =~ s/\n?finished\n?\z//;
    return $output;
}

# Switches to a new WAL segment and waits until the archiver has the one that was current, so that
# a restore from the archive sees everything written so far.
sub archive_current_wal {
    my ($node) = @_;
    my $segment = $node->safe_psql('postgres', 'SELECT pg_walfile_name(pg_current_wal_lsn())');
    $node->safe_psql('postgres', 'SELECT pg_switch_wal()');
    $node->poll_query_until('postgres',
        "SELECT last_archived_wal >= '$segment' FROM pg_stat_archiver")
      or die "the WAL segment $segment was not archived";
}

# The file that tells the fault library which fault to inject (start_with_mark_faults).
my $mark_fault_file;

# Builds the fault library test/faults/mark_faults.c, here so that a test needs nothing but a C
# compiler, and starts the node with it preloaded and no fault injected.
sub start_with_mark_faults {
    my ($node) = @_;
    my $library = "$PostgreSQL::Test::Utils::tmp_check/mark_faults_$$.so";
    $mark_fault_file = "$PostgreSQL::Test::Utils::tmp_check/mark_fault_$$";
    command_ok(['cc', '-shared', '-fPIC', '-o', $library,
            "$FindBin::RealBin/../faults/mark_faults.c", '-ldl'], 'the fault library builds');
    local $ENV{LD_PRELOAD} = $library;
    local $ENV{SNOWFLAKE_FAULT_FILE} = $mark_fault_file;
    inject_mark_fault('');
    $node->start;
}

# Switches the fault that the preloaded library injects: 'enospc', 'eio', 'stall' or '' for none.
sub inject_mark_fault {
    unlink $mark_fault_file;
    PostgreSQL::Test::Utils::append_to_file($mark_fault_file, $_[0]);
}

# Builds test/faults/old_mark_record.c against the node's server headers and declares its
# function in the node's postgres database: snowflake_test_old_mark(mark_unix_ms bigint) writes
# and flushes a mark record as releases before 1.10 wrote it and returns the record's end.
sub create_old_mark_function {
    my ($node) = @_;
    my $library = "$PostgreSQL::Test::Utils::tmp_check/old_mark_record_$$.so";
    command_ok(['cc', '-shared', '-fPIC', '-I', $node->config_data('--includedir-server'),
            '-o', $library, "$FindBin::RealBin/../faults/old_mark_record.c"],
        'the library that writes old mark records builds');
    $node->safe_psql('postgres', qq(CREATE FUNCTION snowflake_test_old_mark(bigint) RETURNS pg_lsn
AS '$library', 'snowflake_test_old_mark' LANGUAGE C STRICT));
}

# The largest id in a table, or -1 when it is empty.
sub max_id {
    my ($node, $table, $dbname) = @_;
    return $node->safe_psql($dbname // 'postgres', "SELECT coalesce(max(id), -1) FROM $table");
}

# kill -9 of the postmaster, then waits until it and every child it left are gone, so that the
# next start finds neither a live lock file owner nor shared memory still attached. The children
# are found by their process titles: PostgreSQL::Test::Cluster starts every server with
# --cluster-name set to the node's name, and each child's title begins "postgres: NAME:".
# Zombies (state Z) are left out: they hold no shared memory.
sub kill9_and_wait {
    my ($node) = @_;
    my $name = $node->name;
    my ($postmaster_pid) = split /\n/, slurp_file($node->data_dir . '/postmaster.pid');
    $node->kill9;
    for (1 .. 10 * $PostgreSQL::Test::Utils::timeout_default) {
        my $left = `ps -eo stat=,args= | grep -v '^Z' | grep -c '[p]ostgres: $name:'`;
        chomp $left;
        return if !kill(0, $postmaster_pid) && $left eq '0';
        usleep(100_000);
    }
    BAIL_OUT("processes of $name are still running after kill -9");
}

# A server of the floor's tests (019, 034): node pair (3, 4), fsync on, the given settings, its
# clock in $clock_file; started, with the extension, and a plain role alice who owns the schema
# "Odd Schema".
sub keys_floor_node {
    my ($name, $clock_file, $settings) = @_;
    my $node = snowflake_node($name, datacenter_id => 3, machine_id => 4);
    $node->append_conf('postgresql.conf', "fsync = on\n$settings");
    start_with_clock($node, $clock_file);
    $node->safe_psql('postgres', q(
CREATE EXTENSION snowflake;
CREATE ROLE alice LOGIN;
CREATE SCHEMA "Odd Schema" AUTHORIZATION alice;
));
    return $node;
}

# Restarts a server of the floor's tests (019, 034) with its clock, without the mark file if
# $remove_mark, so that the start reads the stored keys; returns the log's length before it.
sub restart_reading_keys {
    my ($node, $clock_file, $remove_mark) = @_;
    $node->stop;
    unlink $node->data_dir . '/snowflake_mark' if $remove_mark;
    my $offset = -s $node->logfile;
    start_with_clock($node, $clock_file);
    return $offset;
}

# The keys are read as soon as the server starts. For a test that must do something first (lock
# tables, begin a transaction), this starts without the mark file and with datacenter_id unset,
# so that the read finds nothing to do; read_keys_now() then sets it, which reads the keys again
# for the pair now set. Returns the log's length before the start.
sub restart_keys_unread {
    my ($node, $clock_file) = @_;
    $node->adjust_conf('postgresql.conf', 'snowflake.datacenter_id', '-1');
    return restart_reading_keys($node, $clock_file, 1);
}

# Sets datacenter_id back after restart_keys_unread() and waits until the server has it.
sub read_keys_now {
    my ($node, $datacenter_id) = @_;
    $node->adjust_conf('postgresql.conf', 'snowflake.datacenter_id', $datacenter_id);
    $node->reload;
    $node->poll_query_until('postgres',
        "SELECT current_setting('snowflake.datacenter_id') = '$datacenter_id'")
      or die 'the reload did not set snowflake.datacenter_id';
}

# Starts the maintenance of every table (CALL snowflake_run_partition_maintenance(), or the
# statement given) in a session of its own, waits until a table owner's code that it runs sleeps
# in pg_sleep() (in that session, or in the worker of the run's table), cancels it, and returns
# what the session printed to its standard error once the call has ended.
sub cancel_run_in_her_sleep {
    my ($node, $statement) = @_;
    $statement //= 'CALL snowflake_run_partition_maintenance()';
    my $run = $node->background_psql('postgres', on_error_stop => 0);
    $run->query_until(qr/started\n/, "\\echo started\n$statement;\n");
    $node->poll_query_until('postgres', qq(
SELECT EXISTS (SELECT FROM pg_stat_activity WHERE wait_event = 'PgSleep'
               AND (backend_type = 'snowflake partition maintenance'
                    OR query LIKE '$statement%'))))
      or die 'the call never slept in her code';
    $node->safe_psql('postgres', qq(
SELECT pg_cancel_backend(pid) FROM pg_stat_activity
WHERE query LIKE '$statement%' AND pid <> pg_backend_pid()));
    $run->query('SELECT 1');
    my $stderr = $run->{stderr};
    $run->quit;
    return $stderr;
}

1;
