# A table sharded over three servers with distinct node ids, written directly on each shard and
# through a postgres_fdw coordinator at the same time, then gathered by logical replication into
# one reporting server whose primary key would stop replication at the first duplicate. Then the
# peer check: healthy shards, a fourth server started with a pair already in use, a peer that
# does not answer.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IO::Socket::INET;
use SnowflakeTest;

# A connection string that can sit inside an SQL literal as it is.
sub plain_connstr {
    my ($node) = @_;
    return 'host=' . $node->host . ' port=' . $node->port . ' dbname=postgres';
}

my $table = 'CREATE TABLE events (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), '
  . 'shard integer NOT NULL, origin text NOT NULL)';

my @shards;
for my $number (1 .. 3) {
    my $shard = snowflake_node("shard$number", allows_streaming => 'logical', datacenter_id => 1,
        machine_id => $number);
    $shard->start;
    $shard->safe_psql('postgres', qq(
CREATE EXTENSION snowflake;
$table;
CREATE PUBLICATION shard_publication FOR TABLE events;
));
    push @shards, $shard;
}

# The coordinator has a pair of its own: rows inserted through it get its ids.
my $coordinator = snowflake_node('coordinator', datacenter_id => 2, machine_id => 1);
$coordinator->start;
$coordinator->safe_psql('postgres', q(
CREATE EXTENSION snowflake;
CREATE EXTENSION postgres_fdw;
CREATE TABLE events (id bigint NOT NULL DEFAULT snowflake_nextval(), shard integer NOT NULL,
                     origin text NOT NULL) PARTITION BY LIST (shard);
));
for my $number (1 .. 3) {
    my $shard = $shards[ $number - 1 ];
    my $host = $shard->host;
    my $port = $shard->port;
    $coordinator->safe_psql('postgres', qq(
CREATE SERVER shard$number FOREIGN DATA WRAPPER postgres_fdw
    OPTIONS (host '$host', port '$port', dbname 'postgres', batch_size '1000');
CREATE USER MAPPING FOR CURRENT_USER SERVER shard$number;
CREATE FOREIGN TABLE events_shard$number PARTITION OF events FOR VALUES IN ($number)
    SERVER shard$number OPTIONS (table_name 'events');
));
}

my $reporting = PostgreSQL::Test::Cluster->new('reporting');
$reporting->init;
$reporting->start;
$reporting->safe_psql('postgres',
    'CREATE TABLE events (id bigint PRIMARY KEY, shard integer NOT NULL, origin text NOT NULL)');
for my $number (1 .. 3) {
    my $connection = plain_connstr($shards[ $number - 1 ]);
    $reporting->safe_psql('postgres', qq(
CREATE SUBSCRIPTION subscription_shard$number CONNECTION '$connection'
    PUBLICATION shard_publication));
}

# Every subscription has finished its initial table sync before the writes start.
$reporting->poll_query_until('postgres',
    q(SELECT count(*) = 0 FROM pg_subscription_rel WHERE srsubstate NOT IN ('r', 's')))
  or die 'the subscriptions did not finish their initial sync';

# 3 x 80,000 rows directly on the shards and 60,000 through the coordinator, all at once.
my @writers;
for my $number (1 .. 3) {
    push @writers, [ $shards[ $number - 1 ],
        "INSERT INTO events (shard, origin) SELECT $number, 'direct' FROM generate_series(1, 80000)" ];
}
push @writers, [ $coordinator,
    "INSERT INTO events (shard, origin) SELECT 1 + n % 3, 'coordinator' FROM generate_series(1, 60000) AS n" ];
my @sessions = map { start_statement($_->[0], 'postgres', $_->[1]) } @writers;
finish_statement($_) for @sessions;
is(join(',', map { $_->safe_psql('postgres', "SELECT count(*) FROM events WHERE origin = 'direct'") }
        @shards),
    '80000,80000,80000', 'every shard holds all the rows written to it directly');

my $total = 0;
$total += $_->safe_psql('postgres', 'SELECT count(*) FROM events') for @shards;
is($total, 300000, 'the shards hold 300,000 rows');
$_->wait_for_catchup("subscription_shard" . ($_->name =~ /(\d)$/)[0]) for @shards;
# A duplicate would stop an apply worker, and the count would never get there.
$reporting->poll_query_until('postgres', 'SELECT count(*) FROM events', '300000');
is($reporting->safe_psql('postgres', 'SELECT count(*) FROM events'),
    300000, 'all 300,000 rows reached the reporting server through logical replication');
is($reporting->safe_psql('postgres', 'SELECT count(*) - count(DISTINCT id) FROM events'),
    0, 'no id appears twice among the rows of all shards');
is( $reporting->safe_psql('postgres', q(
SELECT string_agg(origin || ':' || snowflake_pair || ':' || rows, ',' ORDER BY origin, snowflake_pair)
FROM (SELECT origin, ((id >> 17) & 31) || '/' || ((id >> 12) & 31) AS snowflake_pair, count(*) AS rows
      FROM events GROUP BY 1, 2) s)),
    'coordinator:2/1:60000,direct:1/1:80000,direct:1/2:80000,direct:1/3:80000',
    'each row carries the node pair of the server that received its INSERT');
is($reporting->safe_psql('postgres',
        q(SELECT count(*) FROM pg_stat_subscription WHERE relid IS NULL AND pid IS NOT NULL)),
    3, 'all three subscriptions are still running');

# The peer check from the coordinator: three healthy shards.
my @shard_connections = map { plain_connstr($_) } @shards;
my $peer_array = 'ARRAY[' . join(', ', map { "'$_'" } @shard_connections) . ']';
is( $coordinator->safe_psql('postgres',
        "SELECT string_agg(datacenter_id || '/' || machine_id || ':' || coalesce(problem, 'ok'), ',') "
          . "FROM snowflake_check_peers($peer_array)"),
    '1/1:ok,1/2:ok,1/3:ok', 'the peer check finds the three shards healthy');

# A fourth server started with shard 1's pair is reported, and so is shard 1.
my $rogue = snowflake_node('rogue', datacenter_id => 1, machine_id => 1);
$rogue->start;
$rogue->safe_psql('postgres', 'CREATE EXTENSION snowflake');
my $with_rogue = 'ARRAY[' . join(', ', map { "'$_'" } @shard_connections, plain_connstr($rogue)) . ']';
is( $coordinator->safe_psql('postgres',
        "SELECT string_agg(coalesce(problem, 'ok'), ',') FROM snowflake_check_peers($with_rogue)"),
    'same node pair as member 4,ok,ok,same node pair as member 1',
    'the peer check reports the reused node pair on both servers');

# A peer that accepts the connection but never answers is reported after the timeout.
my $silent = IO::Socket::INET->new(Listen => 1, LocalAddr => '127.0.0.1', LocalPort => 0,
    Proto => 'tcp') or die "listen: $!";
my $silent_port = $silent->sockport;
like(
    $coordinator->safe_psql('postgres',
        "SELECT problem FROM snowflake_check_peers(ARRAY['host=127.0.0.1 port=$silent_port "
          . "sslmode=disable'], 10000, 500)"),
    qr/^did not answer within 500 ms$/, 'a silent peer is reported, not waited on');
close $silent;

$_->stop for @shards, $coordinator, $reporting, $rogue;
done_testing();
