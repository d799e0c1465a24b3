# Citus, when it is installed in the PostgreSQL under test (it is not in the package registry, so
# the suite skips this file otherwise): a coordinator and two workers, each with its own node
# pair, and one distributed table keyed by DEFAULT snowflake_nextval(). Rows go in through the
# coordinator (single rows and INSERT ... SELECT) and directly on each worker; every id is unique
# and carries the machine id of the node that evaluated the default. A snowflake_timestamp(id)
# predicate reaches the shards and is answered by their primary keys. A second distributed table
# has the snowflake type as its distribution column: its rows get their ids from the default, a
# lookup by id goes to one shard, row_to_json writes the id as a string, and a reference table's
# bigint column joins it. A third is partitioned by month with snowflake_partition_table(), and
# Citus distributes each partition it attaches; retention drops an old month's shards with it. A
# reader by the coordinator's settled bound reads every row of transactions that write to shards
# on both workers, which Citus commits there after the coordinator's own commit.
use strict;
use warnings;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;

my @members = (['coordinator', 1], ['worker1', 2], ['worker2', 3]);
my %node;
for my $member (@members) {
    my ($name, $machine_id) = @$member;
    $node{$name} = snowflake_node("citus_$name", datacenter_id => 6, machine_id => $machine_id);
}
# .ci/run sets SNOWFLAKE_REQUIRE_CITUS for a server that comes with Citus, so that the test cannot
# skip there unnoticed.
my $pkglibdir = $node{coordinator}->config_data('--pkglibdir');
if (!-e "$pkglibdir/citus.so") {
    BAIL_OUT("Citus is required but not installed ($pkglibdir/citus.so)")
      if $ENV{SNOWFLAKE_REQUIRE_CITUS};
    plan skip_all => "Citus is not installed in this PostgreSQL ($pkglibdir/citus.so)";
}

# Citus must come first in shared_preload_libraries.
for my $member (@members) {
    my $server = $node{ $member->[0] };
    $server->append_conf('postgresql.conf', "shared_preload_libraries = 'citus,snowflake'\n");
    $server->start;
    $server->safe_psql('postgres', 'CREATE EXTENSION citus; CREATE EXTENSION snowflake;');
}
my $coordinator = $node{coordinator};
$coordinator->safe_psql('postgres',
    sprintf("SELECT citus_set_coordinator_host('%s', %d)", $coordinator->host, $coordinator->port));
for my $name ('worker1', 'worker2') {
    $coordinator->safe_psql('postgres',
        sprintf("SELECT citus_add_node('%s', %d)", $node{$name}->host, $node{$name}->port));
}
$coordinator->safe_psql('postgres', q(
CREATE TABLE events (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), origin text NOT NULL);
SELECT create_distributed_table('events', 'id');
));

# The distribution column is the id, so the node that takes the INSERT evaluates the default to
# route the row: through the coordinator, the coordinator's generator.
$coordinator->safe_psql('postgres', q(
DO $$
BEGIN
    FOR i IN 1 .. 500 LOOP
        INSERT INTO events (origin) VALUES ('coordinator, single rows');
    END LOOP;
END
$$;
INSERT INTO events (origin) SELECT 'coordinator, INSERT ... SELECT' FROM generate_series(1, 20000);
));
for my $name ('worker1', 'worker2') {
    $node{$name}->safe_psql('postgres',
        "INSERT INTO events (origin) SELECT '$name' FROM generate_series(1, 20000)");
}

is( $coordinator->safe_psql('postgres',
        'SELECT count(*) || \' \' || count(DISTINCT id) FROM events'),
    '60500 60500', 'all 60,500 ids in the distributed table are distinct');
is( $coordinator->safe_psql('postgres', q(
SELECT string_agg(origin || ': ' || machine_ids, ', ' ORDER BY origin)
FROM (SELECT origin, string_agg(DISTINCT snowflake_machine_id(id)::text, '/') AS machine_ids
      FROM events GROUP BY origin) AS by_origin)),
    'coordinator, INSERT ... SELECT: 1, coordinator, single rows: 1, worker1: 2, worker2: 3',
    'each id carries the machine id of the node that evaluated the default');

# A bound that leaves few rows, so that each shard's planner prefers its primary key.
$coordinator->safe_psql('postgres', 'ANALYZE events');
my $last_instant = $coordinator->safe_psql('postgres',
    "SELECT snowflake_timestamp(max(id)) FROM events");
my $plan = $coordinator->safe_psql('postgres', qq(
EXPLAIN (COSTS OFF) SELECT count(*) FROM events WHERE snowflake_timestamp(id) >= '$last_instant'));
like($plan, qr/Index (Only )?Scan using events_pkey_\d+ on events_\d+/,
    'the shards answer a snowflake_timestamp(id) predicate with their primary keys');
# The coordinator's hook adds the condition to the query it sends; each shard's hook adds it too.
like($plan, qr/Index Cond: \(\(?id >= '\d+'::bigint\)?/,
    'through the condition on the id that the hook adds');
is( $coordinator->safe_psql('postgres',
        "SELECT count(*) > 0 FROM events WHERE snowflake_timestamp(id) >= '$last_instant'"),
    't', 'and the rows of that instant are found');

# Citus hashes the snowflake type with its own hash function, bigint's.
$coordinator->safe_psql('postgres', q(
CREATE TABLE typed_events (id snowflake PRIMARY KEY DEFAULT snowflake_nextval(),
                           origin text NOT NULL);
SELECT create_distributed_table('typed_events', 'id', shard_count := 32);
CREATE TABLE typed_notes (event_id bigint NOT NULL, note text NOT NULL);
SELECT create_reference_table('typed_notes');
DO $$
BEGIN
    FOR i IN 1 .. 100 LOOP
        INSERT INTO typed_events (origin) VALUES ('single row');
    END LOOP;
END
$$;
INSERT INTO typed_events (origin) SELECT 'INSERT ... SELECT' FROM generate_series(1, 10000);
));
is( $coordinator->safe_psql('postgres', q(
SELECT count(*) || ' ' || count(DISTINCT id) || ' ' || min(pg_typeof(id)::text) || ' '
    || string_agg(DISTINCT snowflake_machine_id(id)::text, '/')
FROM typed_events)),
    '10100 10100 snowflake 1',
    'the default fills the snowflake distribution column with distinct ids of the coordinator');
is( $coordinator->safe_psql('postgres', q(
SELECT count(*) FILTER (WHERE result::integer > 0) || ' of ' || count(*)
FROM run_command_on_shards('typed_events', 'SELECT count(*) FROM %s'))),
    '32 of 32', 'the rows are spread over every shard');
my $an_id = $coordinator->safe_psql('postgres',
    'SELECT id FROM typed_events ORDER BY id LIMIT 1 OFFSET 77');
like($coordinator->safe_psql('postgres',
        "EXPLAIN (COSTS OFF) SELECT * FROM typed_events WHERE id = $an_id"),
    qr/Task Count: 1\n/, 'a lookup by id is routed to one shard');
is( $coordinator->safe_psql('postgres',
        "SELECT row_to_json(e)::text FROM typed_events e WHERE id = $an_id"),
    qq({"id":"$an_id","origin":"single row"}), 'row_to_json of the row writes the id as a string');
$coordinator->safe_psql('postgres', q(
INSERT INTO typed_notes SELECT id, 'noted' FROM typed_events WHERE id % 10 = 3;
INSERT INTO typed_notes VALUES (1, 'no such event')));
is( $coordinator->safe_psql('postgres', q(
SELECT count(*) || ' ' || bool_and(n.event_id = e.id)
FROM typed_events e JOIN typed_notes n ON n.event_id = e.id)),
    $coordinator->safe_psql('postgres',
        "SELECT count(*) - 1 || ' true' FROM typed_notes"),
    "a reference table's bigint column joins the snowflake distribution column");
# max() and min() of the type (1.9) over every shard: the extremes, of the type, written as
# strings in JSON; the same per group.
is( $coordinator->safe_psql('postgres', q(
SELECT pg_typeof(m.top) || ' ' || (m.top = b.top AND m.bottom = b.bottom) || ' '
       || (to_json(m.top)::text = '"' || m.top || '"')
FROM (SELECT max(id) AS top, min(id) AS bottom FROM typed_events) AS m,
     (SELECT max(id::bigint) AS top, min(id::bigint) AS bottom FROM typed_events) AS b)),
    'snowflake true true', 'max(id) and min(id) of a distributed table keep the type');
is( $coordinator->safe_psql('postgres', q(
SELECT count(*) FILTER (WHERE pg_typeof(top) = 'snowflake'::regtype AND top = top_bigint)
FROM (SELECT origin, max(id) AS top, max(id::bigint) AS top_bigint FROM typed_events
      GROUP BY origin) AS g)),
    '2', 'and per group');

# A distributed table partitioned by time on its key (1.7): Citus gives every partition that
# snowflake_partition_table() and snowflake_maintain_partitions() attach its shards, and rows
# routed by the default land in the current month's.
$coordinator->safe_psql('postgres', q(
CREATE TABLE monthly_events (id snowflake NOT NULL DEFAULT snowflake_nextval(), kind text)
    PARTITION BY RANGE (id);
SELECT create_distributed_table('monthly_events', 'id', shard_count := 4);
SELECT count(*) FROM snowflake_partition_table('monthly_events', '1 month', 2);
INSERT INTO monthly_events (kind) SELECT 'signup' FROM generate_series(1, 1000);
));
is( $coordinator->safe_psql('postgres', q(
SELECT count(*) || ' ' || bool_and(p.partition::text ~ '^monthly_events_p\d{4}_\d{2}$')
    || ' ' || bool_and(d.shards = 4)
FROM (SELECT inhrelid::regclass AS partition FROM pg_inherits
      WHERE inhparent = 'monthly_events'::regclass) AS p
JOIN LATERAL (SELECT count(*) AS shards FROM pg_dist_shard
              WHERE logicalrelid = p.partition) AS d ON true)),
    '3 true true', "the month's partition and two ahead, each distributed over 4 shards");
is( $coordinator->safe_psql('postgres', q(
SELECT count(*) FROM monthly_events
WHERE snowflake_timestamp(id) >= date_trunc('month', now(), 'UTC'))),
    '1000', "the rows went in, through the current month's partition");
is( $coordinator->safe_psql('postgres',
        q(SELECT count(*) FROM snowflake_maintain_partitions('monthly_events')
          WHERE action <> 'nothing to do')),
    '0', 'maintenance then has nothing to do');

# Retention on it: a month two months back, adopted with its rows, is detached and dropped with
# its shards on every worker (the month between, created to fill the gap, is kept), and the other
# months keep theirs.
$coordinator->safe_psql('postgres', q(
CREATE TABLE monthly_events_old PARTITION OF monthly_events
    FOR VALUES FROM (snowflake_min_id(date_trunc('month', now(), 'UTC') - interval '2 months'))
    TO (snowflake_min_id(date_trunc('month', now(), 'UTC') - interval '1 month'));
INSERT INTO monthly_events (id, kind)
SELECT snowflake_min_id(date_trunc('month', now(), 'UTC') - interval '2 months') + g, 'old'
FROM generate_series(1, 10) AS g;
));
# Citus hides shards from pg_class unless told otherwise.
my $old_shards = q(SET citus.override_table_visibility = off;
SELECT count(*) FROM pg_class WHERE relname LIKE 'monthly\_events\_old\_%');
my $shards_before = join ' ', map { $node{$_}->safe_psql('postgres', $old_shards) } 'worker1', 'worker2';
isnt($shards_before, '0 0', "the old month's shards are on the workers");
is( $coordinator->safe_psql('postgres', q(
SELECT string_agg(action, ', ') FROM snowflake_partition_table('monthly_events', '1 month', 2,
    retain => '1 month', drop_expired => true)
WHERE partition = 'public.monthly_events_old')),
    'adopted, detached and dropped (older than the retention)',
    'retention drops the old month, once adopted');
is(join(' ', map { $node{$_}->safe_psql('postgres', $old_shards) } 'worker1', 'worker2'),
    '0 0', 'and no shard of it is left on a worker');
is( $coordinator->safe_psql('postgres', q(
SELECT count(*) || ' ' || (SELECT count(*) FROM monthly_events) FROM pg_dist_shard
WHERE logicalrelid::text LIKE 'monthly\_events\_p%')),
    '16 1000', 'the other months keep their shards and rows');

# The settled bound through the coordinator, which draws the ids: transactions that write to
# shards on both workers commit there after the coordinator's own commit (Citus's two-phase
# commit). A reader by the coordinator's bound reads every committed row exactly once.
$coordinator->safe_psql('postgres', q(
CREATE TABLE followed (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), n integer NOT NULL);
SELECT create_distributed_table('followed', 'id', shard_count := 4);
));
my $writer_script = "$PostgreSQL::Test::Utils::tmp_check/writer_011.sql";
PostgreSQL::Test::Utils::append_to_file($writer_script,
    "INSERT INTO followed (n) SELECT g FROM generate_series(1, 8) AS g;\n");
# 4 writers of 100 transactions of 8 rows each.
my $writers = IPC::Run::start(
    [ 'pgbench', '-n', '-c', '4', '-j', '2', '-t', '100', '-f', $writer_script,
        $coordinator->connstr('postgres') ],
    '>', \my $writers_out, '2>', \my $writers_err);
my %read;
my ($cursor, $read_twice) = (0, 0);
# One session, so that a read follows its bound within a millisecond or two.
my $reader = $coordinator->background_psql('postgres');
my $read_below_bound = sub {
    my $bound = $reader->query_safe('SELECT snowflake_settled_bound()');
    for my $id (split /\n/, $reader->query_safe(
            "SELECT id FROM followed WHERE id >= $cursor AND id < $bound ORDER BY id")) {
        $read_twice++ if $read{$id}++;
    }
    $cursor = $bound if $bound > $cursor;
};
# The reader reads as long as the writers write, and once more after them.
while ($writers->pumpable) {
    $read_below_bound->();
    $writers->pump_nb;
}
$writers->finish;
$read_below_bound->();
$reader->quit;
my @followed = split /\n/, $coordinator->safe_psql('postgres', 'SELECT id FROM followed');
is(scalar(@followed), 3200, 'the writers wrote 3,200 rows') or diag($writers_err);
is(scalar(grep { !$read{$_} } @followed), 0,
    "a reader by the coordinator's bound read every row the workers committed");
is($read_twice, 0, 'and none twice');

# Following changes (1.12): Citus refuses the triggers of a tracked table on a distributed one,
# whichever comes first, unless citus.enable_unsafe_triggers is on (doc/reference.md
# "snowflake_track_changes()"). Each refusal leaves nothing tracked.
$coordinator->safe_psql('postgres', q(
CREATE TABLE distributed_first (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), note text);
SELECT create_distributed_table('distributed_first', 'id');
CREATE TABLE tracked_first (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), note text);
SELECT snowflake_track_changes('tracked_first');
));
my ($ret, $out, $err) = $coordinator->psql('postgres',
    q(SELECT snowflake_track_changes('distributed_first')));
like($err, qr/triggers are not supported on distributed tables/,
    'tracking a distributed table is refused, on its triggers');
($ret, $out, $err) = $coordinator->psql('postgres',
    q(SELECT create_distributed_table('tracked_first', 'id')));
like($err, qr/cannot distribute relation "tracked_first" because it has triggers/,
    'distributing a tracked table is refused, on its triggers');
is($coordinator->safe_psql('postgres', q(
SELECT string_agg(tracked::text, ' ') FROM snowflake_catalog.snowflake_tracked_tables)),
    'tracked_first', 'only the local table is tracked');

$_->stop for values %node;
done_testing();
