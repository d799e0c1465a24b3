# Failover while one long statement generates. Nothing commits during it, so only the extension's
# own flush of each mark record lets walsenders ship it: the promoted standby, whose clock runs
# 3 s behind (so that its first ids fall in the milliseconds the old primary used last, however
# long the promotion takes), must issue no id at or below one the old primary already sent to its
# client. With
# synchronous replication no id is issued under a mark before the synchronous standby has it, so
# the window closes completely: with that standby gone, generation waits (cancellably) instead.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use SnowflakeTest;

plan skip_all => 'libfaketime is not installed' unless have_libfaketime();

# The statement of the failure report: 40,000,000 ids streamed to the client through COPY.
my $copy_ids = q(\copy (SELECT snowflake_nextval() FROM (SELECT generate_series(1, 40000000)) g) TO );

# A primary with the extension and a streaming standby whose clock runs 3 s behind; the standby is
# told to wait out those seconds after promotion instead of refusing. With synchronous true the
# standby is made the primary's synchronous standby once it streams.
sub primary_and_standby {
    my ($name, $synchronous) = @_;
    my $primary = snowflake_node("${name}_primary", allows_streaming => 1, datacenter_id => 4,
        machine_id => 5);
    $primary->append_conf('postgresql.conf', "fsync = on\n");
    $primary->start;
    $primary->safe_psql('postgres', 'CREATE EXTENSION snowflake');
    $primary->backup('base');
    my $standby = PostgreSQL::Test::Cluster->new("${name}_standby");
    $standby->init_from_backup($primary, 'base', has_streaming => 1);
    $standby->append_conf('postgresql.conf', "snowflake.max_clock_rollback_wait = '20s'\n");
    my $clock = "$PostgreSQL::Test::Utils::tmp_check/clock_offset_${name}";
    set_clock_offset($clock, '-3');
    start_with_clock($standby, $clock);
    $primary->wait_for_catchup($standby);
    if ($synchronous) {
        $primary->safe_psql('postgres',
            "ALTER SYSTEM SET synchronous_standby_names = '${name}_standby'");
        $primary->reload;
        $primary->poll_query_until('postgres',
            "SELECT sync_state = 'sync' FROM pg_stat_replication "
              . "WHERE application_name = '${name}_standby'")
          or die 'the standby did not become synchronous';
    }
    return ($primary, $standby, $clock);
}

# The ms between the timestamps of the first id in the file and of its last whole line so far, or
# 0 before there are two: the end is read, not the millions of lines before it.
sub span_received_ms {
    my ($ids_file) = @_;
    open(my $ids, '<', $ids_file) or return 0;
    my ($first) = (<$ids> // '') =~ /^(\d+)\n\z/;
    seek($ids, -4096, 2) or seek($ids, 0, 0);
    read($ids, my $tail, 4096);
    close $ids;
    my ($last) = $tail =~ /\n(\d+)\n[^\n]*\z/;
    return defined $first && defined $last ? ($last >> 22) - ($first >> 22) : 0;
}

# Streams ids to a file until the client has received ids spanning more than 2 s, across leases,
# then stops the primary with -m immediate mid-statement.
sub stream_ids_then_crash {
    my ($primary, $ids_file) = @_;
    my $session = $primary->background_psql('postgres');
    $session->query_until(qr/streaming/, "\\echo streaming\n$copy_ids '$ids_file'\n");
    for (1 .. 10 * $PostgreSQL::Test::Utils::timeout_default) {
        last if span_received_ms($ids_file) > 2000;
        usleep(100_000);
    }
    $primary->stop('immediate');
    # psql has exited on the lost connection, closing the file; quit's "\q" meets a closed pipe.
    eval { $session->quit };
}

# How many ids the client received, the first and the last (largest) of them.
sub ids_received {
    my ($ids_file) = @_;
    my ($count, $first, $last) = (0, undef, undef);
    open(my $ids, '<', $ids_file) or die "open $ids_file: $!";
    while (my $line = <$ids>) {
        last unless $line =~ /^(\d+)\n\z/;
        $count++;
        $first //= $1;
        $last = $1;
    }
    close $ids;
    return ($count, $first, $last);
}

# Promotes the standby at once and makes 500,000 ids there; returns the smallest.
sub first_id_after_promotion {
    my ($standby) = @_;
    $standby->promote;
    return $standby->safe_psql('postgres',
        'SELECT min(snowflake_nextval()) FROM generate_series(1, 500000)');
}

# Asynchronous streaming replication.
# Every id of the promoted standby must be above every id the old primary sent (which only grew),
# so none can equal one of them.
sub check_failover {
    my ($primary, $standby, $name) = @_;
    my $ids_file = "$PostgreSQL::Test::Utils::tmp_check/ids_$name";
    stream_ids_then_crash($primary, $ids_file);
    my $first_after = first_id_after_promotion($standby);
    my ($sent, $first_sent, $last_sent) = ids_received($ids_file);
    # The ids' own timestamps (ms since the epoch start at bit 22) show how long it generated.
    my $span_ms = ($last_sent >> 22) - ($first_sent >> 22);
    cmp_ok($span_ms, '>', 2000,
        "$name: the old primary sent $sent ids in one statement over $span_ms ms, across leases");
    cmp_ok($first_after, '>', $last_sent,
        "$name: every id of the promoted standby is above every id the old primary sent");
}

my ($primary, $standby) = primary_and_standby('async', 0);
check_failover($primary, $standby, 'async');
$standby->stop;

# Synchronous replication: the same scenario, and the wait when the standby is gone.
my ($sync_primary, $sync_standby, $sync_clock) = primary_and_standby('sync', 1);
$sync_primary->safe_psql('postgres', 'SELECT snowflake_nextval()');

$sync_standby->stop;
# Past the lease taken above, every id needs a new mark, which the standby must have first.
$sync_primary->poll_query_until('postgres',
    q(SELECT clock_timestamp() >= persisted_mark + interval '1 ms' FROM snowflake_info()))
  or die 'the clock did not pass the mark';
my $issued_before = $sync_primary->safe_psql('postgres',
    'SELECT ids_generated FROM snowflake_info()');
my $error = error_of($sync_primary,
    "SET statement_timeout = '2s'; SELECT snowflake_nextval()");
like($error, qr/ERROR:  57014: canceling statement due to statement timeout/,
    'without its synchronous standby the primary waits for it, and a timeout ends the wait');
is($sync_primary->safe_psql('postgres', 'SELECT ids_generated FROM snowflake_info()'),
    $issued_before, 'and no id was issued');

start_with_clock($sync_standby, $sync_clock);
like($sync_primary->safe_psql('postgres', 'SELECT snowflake_nextval()'),
    qr/^\d+$/, 'once the standby is back, generation resumes');
$sync_primary->wait_for_catchup($sync_standby);

check_failover($sync_primary, $sync_standby, 'sync');
$sync_standby->stop;

done_testing();
