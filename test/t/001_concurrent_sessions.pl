# Sessions generating at full speed at the same time on one server never get the same id, and
# each session's ids are strictly increasing.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;

my $node = snowflake_node('concurrent', datacenter_id => 3, machine_id => 21);
$node->start;
$node->safe_psql('postgres', q(
CREATE EXTENSION snowflake;
CREATE UNLOGGED TABLE issued (session int, n int, id bigint);
));

# A barrier: this session holds an advisory lock that every generating session waits for, and
# releases it once all of them wait, so that they start together.
my $barrier = $node->background_psql('postgres');
$barrier->query_safe('SELECT pg_advisory_lock(42)');

my $sessions = 4;
my $per_session = 250_000;
my @generating;
for my $session (1 .. $sessions) {
    my $psql = $node->background_psql('postgres');
    $psql->query_until(qr/waiting/, "\\echo waiting\nSELECT pg_advisory_lock_shared(42);\n"
          . "INSERT INTO issued SELECT $session, n, snowflake_nextval() "
          . "FROM generate_series(1, $per_session) AS n;\n");
    push @generating, $psql;
}
$node->poll_query_until('postgres',
    q(SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted), $sessions)
  or die 'the sessions did not reach the barrier';
$barrier->query_safe('SELECT pg_advisory_unlock(42)');
# A query after the INSERT returns once it finished, and fails if it did.
for my $psql (@generating) {
    $psql->query_safe('SELECT 1');
    $psql->quit;
}
$barrier->quit;

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
