# Ids stay unique and increasing through a clean restart, an immediate shutdown, a kill -9 of the
# postmaster, a kill -9 of one backend while others generate (crash re-initialisation of shared
# memory), and a clock set back while the server was down.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;

plan skip_all => 'libfaketime is not installed' unless have_libfaketime();

my $clock_file = "$PostgreSQL::Test::Utils::tmp_check/clock_offset_004";
my $node = snowflake_node('restarts', datacenter_id => 5, machine_id => 6);
# The test framework turns crash restarts off, which the backend kill below needs, and fsync off,
# which would leave the mark file's fsyncs untested.
$node->append_conf('postgresql.conf', "restart_after_crash = on\nfsync = on\n");
start_with_clock($node, $clock_file);
$node->safe_psql('postgres', q(
CREATE EXTENSION snowflake;
CREATE TABLE issued (id bigint PRIMARY KEY, phase text NOT NULL);
));

# Generates ids at full speed and stores them; the primary key rejects any duplicate.
sub generate {
    my ($phase, $count) = @_;
    $node->safe_psql('postgres',
        "INSERT INTO issued SELECT snowflake_nextval(), '$phase' FROM generate_series(1, $count)");
}

# Every id of the phase is above every id stored before it, and the table has no duplicate.
sub check_phase {
    my ($phase, $max_before) = @_;
    my ($count, $low) = split /\|/, $node->safe_psql('postgres',
        "SELECT count(*), min(id) FROM issued WHERE phase = '$phase'");
    cmp_ok($count, '>', 0, "$phase: ids were issued after the event");
    cmp_ok($low, '>', $max_before, "$phase: every id after the event is above every id before");
    is($node->safe_psql('postgres', 'SELECT count(*) - count(DISTINCT id) FROM issued'),
        0, "$phase: no duplicate among all ids so far");
    note("$phase: $count ids after the event; "
          . $node->safe_psql('postgres', 'SELECT count(*) FROM issued') . ' ids in all');
}

# The mark read back at start-up is at or past every id issued before.
sub mark_covers {
    my ($max, $event) = @_;
    is( $node->safe_psql('postgres',
            "SELECT persisted_mark >= snowflake_timestamp($max) FROM snowflake_info()"),
        't', "$event the restored mark covers every id issued before");
}

generate('first', 200_000);

my $max = max_id($node, 'issued');
$node->stop;
start_with_clock($node, $clock_file);
generate('after_restart', 100_000);
check_phase('after_restart', $max);

$max = max_id($node, 'issued');
$node->stop('immediate');
start_with_clock($node, $clock_file);
generate('after_immediate', 100_000);
check_phase('after_immediate', $max);

# kill -9 of the postmaster right after generating at full speed, and the clock 1 s behind when it
# comes back: only the lease in the mark file keeps the new ids above the old ones. (A wait bound
# covers the case where the restart outlasts the rest of the lease, so that either path waits.)
set_and_reload($node, 'snowflake.max_clock_rollback_wait', '5s');
generate('before_postmaster_kill', 200_000);
$max = max_id($node, 'issued');
kill9_and_wait($node);
set_clock_offset($clock_file, '-1');
start_with_clock($node, $clock_file);
mark_covers($max, 'after kill -9 of the postmaster');
generate('after_postmaster_kill', 100_000);
check_phase('after_postmaster_kill', $max);
set_and_reload($node, 'snowflake.max_clock_rollback_wait');
set_clock_offset($clock_file, '+0');

# kill -9 of one backend while three others generate in small committed batches.
my $batches = join "\n", map {
    "INSERT INTO issued SELECT snowflake_nextval(), 'crash_session' FROM generate_series(1, 2000);"
} 1 .. 400;
my @sessions = map { start_statement($node, 'postgres', $batches) } 1 .. 3;
$node->poll_query_until('postgres',
    "SELECT count(*) >= 20000 FROM issued WHERE phase = 'crash_session'")
  or die 'the sessions did not commit their first batches';
my $victim = $node->safe_psql('postgres',
    "SELECT pid FROM pg_stat_activity WHERE query LIKE 'INSERT INTO issued%' LIMIT 1");
isnt($victim, '', 'found a generating backend to kill');
my $max_before_crash = max_id($node, 'issued');
kill 'KILL', $victim;
# The crash ends every session's connection, so their psql has stopped; quitting one that is gone
# may report a broken pipe, which is expected here.
eval { $_->quit } for @sessions;
$node->poll_query_until('postgres', 'SELECT 1', '1') or BAIL_OUT('no crash recovery');
# Everything committed before the crash counts, including batches that finished after the max
# above was read, so the bound is taken from all crash-session rows.
$max = max_id($node, 'issued');
cmp_ok($max, '>=', $max_before_crash, 'committed ids survived the crash');
mark_covers($max, 'after the crash re-initialisation');
like(slurp_file($node->logfile), qr/terminated by signal 9/, 'the server went through a crash');
generate('after_backend_kill', 100_000);
check_phase('after_backend_kill', $max);

# The clock set back 30 s while the server is down: the rollback rule of doc/operations.md "When
# the clock moves backwards" applies. The clock stands 30 s behind the last id while the call is
# refused, however long the restart took, then runs from there.
generate('before_clock_back', 50_000);
$max = max_id($node, 'issued');
$node->stop;
freeze_clock($clock_file, unix_ms_of($max) - 30_000);
start_with_clock($node, $clock_file);
my $error = error_of($node, 'SELECT snowflake_nextval()');
like($error, qr/ERROR:  58000: clock moved backwards by \d+ ms/,
    'a clock 30 s behind the saved mark is refused with 58000');
is(max_id($node, 'issued'), $max, 'nothing was issued by the refused call');
set_and_reload($node, 'snowflake.max_clock_rollback_wait', '40s');
set_clock_offset($clock_file, offset_behind($max, 30));
generate('after_clock_back', 1000);
check_phase('after_clock_back', $max);

$node->stop;
done_testing();
