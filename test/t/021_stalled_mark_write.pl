# One backend's write of the durable mark stalls in fsync (a hung device or NFS server, injected by
# test/faults/mark_faults.c), with the mark lock held. Every other backend that needs the mark
# moved on waits for it, and that wait obeys statement_timeout, pg_cancel_backend and
# pg_terminate_backend while the writer is still stalled. No id past the durable mark is issued
# meanwhile; once the write returns, generation resumes and ids stay unique and increasing.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use SnowflakeTest;

my $node = snowflake_node('stalled', datacenter_id => 3, machine_id => 4);
$node->append_conf('postgresql.conf', "fsync = on\n");
start_with_mark_faults($node);
# phase: 1 before the stall, 2 the writer's, 3 after it; seq: the order of issue.
$node->safe_psql('postgres', q(
CREATE EXTENSION snowflake;
CREATE TABLE issued (seq bigserial, id bigint PRIMARY KEY, phase integer NOT NULL);
));

$node->safe_psql('postgres',
    'INSERT INTO issued (id, phase) SELECT snowflake_nextval(), 1 FROM generate_series(1, 1000)');

# The writer generates an id every 10 ms; the first of its calls that extends the lease stalls in
# the mark file's fsync, holding the mark lock. Only it generates, so the mark stops moving and
# the clock passes it within a second.
inject_mark_fault('stall');
my $writer = $node->background_psql('postgres');
my $writer_pid = $writer->query_safe('SELECT pg_backend_pid()');
$writer->query_until(qr/started\n/, q(\echo started
DO $$
BEGIN
    FOR i IN 1..200 LOOP
        INSERT INTO issued (id, phase) VALUES (snowflake_nextval(), 2);
        PERFORM pg_sleep(0.01);
    END LOOP;
END $$;
));
ok($node->poll_query_until('postgres',
        'SELECT persisted_mark < clock_timestamp() FROM snowflake_info()'),
    'the stalled write keeps the mark behind the clock');
my $writer_stalled = "SELECT state = 'active' FROM pg_stat_activity WHERE pid = $writer_pid";
my $issued_when_stalled =
  $node->safe_psql('postgres', 'SELECT ids_generated FROM snowflake_info()');

# (a) statement_timeout ends a call waiting for the mark.
my ($timed_out, $stderr);
my $started = time;
$node->psql('postgres',
    "\\set VERBOSITY verbose\nSET statement_timeout = '1s';\nSELECT snowflake_nextval();",
    stderr => \$stderr, timeout => $PostgreSQL::Test::Utils::timeout_default,
    timed_out => \$timed_out);
note(sprintf('statement_timeout of 1 s ended the wait after %.1f s', time - $started));
ok(!$timed_out, 'statement_timeout: the waiting call ends');
like($stderr, qr/ERROR:  57014: canceling statement due to statement timeout/,
    'statement_timeout: it ends with 57014');
is($node->safe_psql('postgres', $writer_stalled), 't', 'statement_timeout: the writer is stalled still');

# Starts a call of snowflake_nextval() in a session of its own and returns the session and its
# backend's pid once the call waits.
sub start_waiting_call {
    my $session = $node->background_psql('postgres');
    my $pid = $session->query_safe('SELECT pg_backend_pid()');
    $session->query_until(qr/started\n/, "\\echo started\nSELECT snowflake_nextval();\n");
    ok($node->poll_query_until('postgres',
            "SELECT wait_event_type IN ('Extension', 'LWLock') "
              . "FROM pg_stat_activity WHERE pid = $pid"),
        "the call in backend $pid waits for the mark");
    return ($session, $pid);
}

# (b) pg_cancel_backend ends one.
my $log_offset = -s $node->logfile;
my ($cancelled, $cancelled_pid) = start_waiting_call();
$node->safe_psql('postgres', "SELECT pg_cancel_backend($cancelled_pid)");
ok($node->poll_query_until('postgres',
        "SELECT count(*) = 0 FROM pg_stat_activity "
          . "WHERE pid = $cancelled_pid AND state = 'active'"),
    'pg_cancel_backend: the waiting call ends');
ok($node->log_contains(qr/ERROR:  canceling statement due to user request\n[^\n]*STATEMENT:  SELECT snowflake_nextval\(\)/,
        $log_offset),
    'pg_cancel_backend: it ends with the cancel error');
is($node->safe_psql('postgres', $writer_stalled), 't', 'pg_cancel_backend: the writer is stalled still');

# (c) pg_terminate_backend ends one.
my ($terminated, $terminated_pid) = start_waiting_call();
$node->safe_psql('postgres', "SELECT pg_terminate_backend($terminated_pid)");
ok($node->poll_query_until('postgres',
        "SELECT count(*) = 0 FROM pg_stat_activity WHERE pid = $terminated_pid"),
    'pg_terminate_backend: the waiting backend ends');
is($node->safe_psql('postgres', $writer_stalled), 't',
    'pg_terminate_backend: the writer is stalled still');

is($node->safe_psql('postgres', 'SELECT ids_generated FROM snowflake_info()'),
    $issued_when_stalled, 'no id was issued while the mark was behind the clock');
is($node->safe_psql('postgres', 'SELECT last_timestamp <= persisted_mark FROM snowflake_info()'),
    't', 'no id past the durable mark was issued');

# Once the write returns, the writer finishes and generation resumes. The cancel and the
# termination made their psqls stop; they are only waited for, now that nothing can hold them.
inject_mark_fault('');
eval { $cancelled->quit };
eval { $terminated->quit };
my $writer_finished = eval { finish_statement($writer); 1 };
ok($writer_finished, 'once the write returns, the writer finishes') or diag($@);
$node->safe_psql('postgres',
    'INSERT INTO issued (id, phase) SELECT snowflake_nextval(), 3 FROM generate_series(1, 1000)');
is($node->safe_psql('postgres', 'SELECT phase, count(*) FROM issued GROUP BY phase ORDER BY phase'),
    "1|1000\n2|200\n3|1000", 'every id was stored, none twice');
is($node->safe_psql('postgres', q(
SELECT count(*) FROM (SELECT id, lag(id) OVER (ORDER BY seq) AS previous FROM issued) s
WHERE id <= previous)),
    '0', 'ids increase in the order they were issued, across the stall');

$node->stop;
done_testing();
