# Sessions generating at full speed at the same time on one server never get the same id, and
# each session's ids are strictly increasing.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes qw(usleep);

my $node = PostgreSQL::Test::Cluster->new('concurrent');
$node->init;
$node->append_conf('postgresql.conf', qq(
shared_preload_libraries = 'snowflake'
snowflake.datacenter_id = 3
snowflake.machine_id = 21
));
$node->start;
$node->safe_psql('postgres', q(
CREATE EXTENSION snowflake;
CREATE UNLOGGED TABLE issued (session int, n int, id bigint);
));

# A barrier: this session holds an advisory lock that every generating session waits for, and
# releases it once all of them wait, so that they start together.
my ($barrier_in, $barrier_out) = ("SELECT pg_advisory_lock(42);\n", '');
my $barrier = IPC::Run::start([ 'psql', '-X', '-q', '-d', $node->connstr('postgres') ],
    '<', \$barrier_in, '>', \$barrier_out);
until ($node->safe_psql('postgres',
        q(SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted)) eq '1') {
    $barrier->pump_nb;
    usleep(10_000);
}

my $sessions = 4;
my $per_session = 250_000;
my @runs;
for my $session (1 .. $sessions) {
    my ($out, $err) = ('', '');
    my $sql = "SELECT pg_advisory_lock_shared(42); "
      . "INSERT INTO issued SELECT $session, n, snowflake_nextval() "
      . "FROM generate_series(1, $per_session) AS n";
    push @runs, [
        IPC::Run::start(
            [ 'psql', '-X', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('postgres'), '-c', $sql ],
            '>', \$out, '2>', \$err),
        \$err ];
}
$node->poll_query_until('postgres',
    q(SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted), $sessions)
  or die 'the sessions did not reach the barrier';
$barrier_in .= "SELECT pg_advisory_unlock(42);\n\\q\n";
$barrier->finish;
for my $run (@runs) {
    my ($harness, $err) = @$run;
    ok($harness->finish, 'session finished') or diag($$err);
}

my $total = $sessions * $per_session;
is($node->safe_psql('postgres', 'SELECT count(*) FROM issued'), $total, "$total ids stored");
is($node->safe_psql('postgres', 'SELECT count(DISTINCT id) FROM issued'),
    $total, 'no id was issued twice');
is( $node->safe_psql(
        'postgres', q(
SELECT count(*) FROM (
    SELECT id, lag(id) OVER (PARTITION BY session ORDER BY n) AS previous FROM issued) s
WHERE id <= previous)),
    0,
    'every session saw strictly increasing ids');

# The sessions really overlapped: their ids share milliseconds.
cmp_ok(
    $node->safe_psql(
        'postgres', q(
SELECT count(*) FROM (
    SELECT snowflake_unix_ms(id) FROM issued GROUP BY 1 HAVING count(DISTINCT session) > 1) s)),
    '>', 0, 'sessions drew from the same milliseconds');
is( $node->safe_psql(
        'postgres',
        'SELECT count(*) FROM issued WHERE snowflake_datacenter_id(id) <> 3 '
          . 'OR snowflake_machine_id(id) <> 21'),
    0,
    'every id carries the configured node ids');

$node->stop;
done_testing();
