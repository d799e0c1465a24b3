# Eight sessions over three databases generating at full speed at once, plus a parallel query
# whose workers call snowflake_nextval(): one generator per server, so no id appears twice. The
# reduced matrix (SNOWFLAKE_MATRIX=reduced) draws a third of the ids: each session still runs
# through thousands of milliseconds' sequences beside the others.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;

my $scale = full_matrix('006') ? 3 : 1;
my $node = snowflake_node('sessions', datacenter_id => 9, machine_id => 10);
$node->start;
my @databases = qw(db_one db_two db_three);
for my $database (@databases) {
    $node->safe_psql('postgres', "CREATE DATABASE $database");
    $node->safe_psql($database, q(
CREATE EXTENSION snowflake;
CREATE UNLOGGED TABLE issued (id bigint PRIMARY KEY);
));
}
my $big_rows = 133_334 * $scale;
$node->safe_psql('db_one', qq(
CREATE TABLE big AS SELECT g FROM generate_series(1, $big_rows) AS g;
ANALYZE big;
));

my $parallel_settings = q(
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET parallel_leader_participation = off;
SET max_parallel_workers_per_gather = 2;
);
like(
    $node->safe_psql('db_one', $parallel_settings
          . 'EXPLAIN (ANALYZE, VERBOSE, COSTS OFF, TIMING OFF, SUMMARY OFF) '
          . 'SELECT snowflake_nextval() FROM big'),
    qr/Workers Launched: [12].*Parallel Seq Scan.*Output: snowflake_nextval\(\)/s,
    'the parallel query calls snowflake_nextval() in its workers');

my $per_session = 50_000 * $scale;
my @sessions;
for my $session (0 .. 7) {
    my $database = $databases[ $session % 3 ];
    push @sessions, start_statement($node, $database,
        "INSERT INTO issued SELECT snowflake_nextval() FROM generate_series(1, $per_session)");
}
my $parallel = start_statement($node, 'db_one',
    $parallel_settings . 'SELECT snowflake_nextval() FROM big');
finish_statement($_) for @sessions;
my $parallel_out = finish_statement($parallel);

my %seen;
my $total = 0;
my $duplicates = 0;
my $add = sub {
    for my $id (split /\n/, $_[0]) {
        $total++;
        $duplicates++ if $seen{$id}++;
    }
};
$add->($node->safe_psql($_, 'SELECT id FROM issued')) for @databases;
$add->($parallel_out);
is($total, 8 * $per_session + $big_rows, "every id was collected ($total)");
is($duplicates, 0, 'no id appears twice across databases, sessions and parallel workers');

$node->stop;
done_testing();
