# Time partitions (version 1.7) under load and through a dump: rows inserted one per transaction
# in one session while other sessions set the table up again and again with more partitions
# ahead, maintain it and detach expired partitions (no insert fails, no row is lost, two
# maintenance sessions at once never fail); pg_dump and pg_restore keep the setup, and
# maintenance of the restored copy has nothing to do; and pg_cron, where its library is
# installed in the PostgreSQL under test (it is skipped otherwise, as the Citus test is), runs
# the README's cron.schedule() line for real and partitions appear.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;

my $node = snowflake_node('partitions', machine_id => 5);
$node->start;
$node->safe_psql('postgres', q(
CREATE EXTENSION snowflake;
CREATE TABLE events (id bigint NOT NULL DEFAULT snowflake_nextval() PRIMARY KEY, body text)
    PARTITION BY RANGE (id);
-- Two old hours with a row each, which the retention detaches while the inserts run.
CREATE TABLE events_old1 PARTITION OF events FOR VALUES
    FROM (snowflake_min_id(date_trunc('hour', now()) - interval '5 hours'))
    TO (snowflake_min_id(date_trunc('hour', now()) - interval '4 hours'));
CREATE TABLE events_old2 PARTITION OF events FOR VALUES
    FROM (snowflake_min_id(date_trunc('hour', now()) - interval '4 hours'))
    TO (snowflake_min_id(date_trunc('hour', now()) - interval '3 hours'));
INSERT INTO events VALUES
    (snowflake_min_id(date_trunc('hour', now()) - interval '5 hours') + 1, 'old'),
    (snowflake_min_id(date_trunc('hour', now()) - interval '4 hours') + 1, 'old');
));
my $setup = $node->safe_psql('postgres',
    q(SELECT string_agg(DISTINCT action, ', ' ORDER BY action)
      FROM snowflake_partition_table('events', '1 hour', 1)));
is($setup, 'adopted, created', 'the old hours are adopted and the rest created');

# One row per transaction, numbered, until the maintenance below is over, so that every
# maintenance step runs while rows go in. A millisecond between them leaves the machine's other
# core to the maintenance and to other tests.
$node->safe_psql('postgres', 'CREATE TABLE stop_inserting (at timestamptz)');
my $inserts = start_statement($node, 'postgres', q(
DO $$
DECLARE
    i integer := 0;
BEGIN
    LOOP
        i := i + 1;
        INSERT INTO events (body) VALUES ('new ' || i);
        COMMIT;
        EXIT WHEN EXISTS (SELECT FROM stop_inserting);
        PERFORM pg_sleep(0.001);
    END LOOP;
END
$$));
# A row of now is in before the retention below is set, so that the newest key is never older
# than the retention (the maintenance would then warn, and rightly).
$node->poll_query_until('postgres', q(SELECT count(*) > 0 FROM events WHERE body LIKE 'new %'))
  or die 'no row went in';
my $rival = start_statement($node, 'postgres', q(
DO $$
BEGIN
    FOR i IN 1 .. 40 LOOP
        PERFORM snowflake_maintain_partitions('events');
        COMMIT;
    END LOOP;
END
$$));
my $created = 0;
for my $ahead (2 .. 21) {
    $created += $node->safe_psql('postgres',
        "SELECT count(*) FROM snowflake_partition_table('events', '1 hour', $ahead,"
          . " retain => '2 hours') WHERE action = 'created'");
    $node->safe_psql('postgres', 'SELECT * FROM snowflake_maintain_partitions()');
}
$node->safe_psql('postgres', 'INSERT INTO stop_inserting VALUES (now())');
my $inserted = eval { finish_statement($inserts); 1 };
ok($inserted, 'no insert failed while partitions were attached and detached')
  or diag($@);
ok(eval { finish_statement($rival); 1 }, 'the concurrent maintenance never failed') or diag($@);
ok($created >= 20, "each new setup created a partition further ahead ($created)");
my ($count, $last) = split /\|/, $node->safe_psql('postgres',
    q(SELECT count(*), max(substr(body, 5)::integer) FROM events WHERE body LIKE 'new %'));
ok($last > 0, "rows went in during the maintenance ($last)");
is($count, $last, 'every row inserted is there, none lost');
is($node->safe_psql('postgres',
        q(SELECT count(*) FROM pg_class WHERE relname IN ('events_old1', 'events_old2')
          AND NOT relispartition)),
    '2', 'the expired hours were detached, not dropped');
is($node->safe_psql('postgres',
        q(SELECT string_agg(action, ', ') FROM snowflake_maintain_partitions('events'))),
    'nothing to do', 'then nothing is due');

# pg_dump and pg_restore keep the setup (an extension configuration table) and the partitions.
my $tmp = $PostgreSQL::Test::Utils::tmp_check;
$node->command_ok(['pg_dump', '-Fc', '-f', "$tmp/events.dump", '-d', $node->connstr('postgres')],
    'pg_dump, custom format');
$node->safe_psql('postgres', 'CREATE DATABASE restored');
$node->command_ok(
    ['pg_restore', '--exit-on-error', '-d', $node->connstr('restored'), "$tmp/events.dump"],
    'the dump restores without an error');
my $setup_query =
  q(SELECT parent, every, ahead, retain, time_zone, drop_expired FROM snowflake_catalog.snowflake_partitioned_tables);
is($node->safe_psql('restored', $setup_query), $node->safe_psql('postgres', $setup_query),
    'the restored database has the setup');
is($node->safe_psql('restored',
        q(SELECT string_agg(action, ', ') FROM snowflake_maintain_partitions())),
    'nothing to do', 'the restored partitions line up and reach as far');
is($node->safe_psql('restored', 'SELECT count(*) FROM events'),
    $node->safe_psql('postgres', 'SELECT count(*) FROM events'), 'and hold every row');

# A maintenance of every table does not wait for a table another session holds: it says so, goes
# on with the others, and leaves that table to the next call.
$node->safe_psql('postgres', q(
CREATE TABLE held (id bigint NOT NULL) PARTITION BY RANGE (id);
CREATE TABLE free (id bigint NOT NULL) PARTITION BY RANGE (id);
SELECT count(*) FROM snowflake_partition_table('held', '1 day', 1);
SELECT count(*) FROM snowflake_partition_table('free', '1 day', 1);
));
my $holder = $node->background_psql('postgres');
$holder->query_safe('BEGIN; LOCK TABLE held IN SHARE UPDATE EXCLUSIVE MODE');
my $report = $node->safe_psql('postgres', q(
SET lock_timeout = '5s';
SELECT parent || ': ' || action FROM snowflake_maintain_partitions()
WHERE parent IN ('held'::regclass, 'free'::regclass) ORDER BY 1));
like($report, qr/^held: skipped: locked by another session$/m,
    'a table another session holds is skipped, not awaited');
like($report, qr/^free: nothing to do$/m, 'and the other tables are maintained');
$holder->query_safe('COMMIT');

# A cancel or statement_timeout ends the maintenance of every table, as it ends a PL/pgSQL
# block's EXCEPTION WHEN OTHERS: it is not taken for one table's failure. Three tables' expired
# partitions are held, and each waits its second (lock_timeout) for them. The two days between
# are made too: the retention removes nothing across a gap. The statement_timeout is shorter than
# a second: it runs out within the first wait, and never after a lock_timeout that has run out too
# (PostgreSQL would then report the lock_timeout alone).
for my $table (map { "held_$_" } 1 .. 3) {
    $node->safe_psql('postgres', qq(
CREATE TABLE $table (id bigint NOT NULL) PARTITION BY RANGE (id);
SELECT count(*) FROM snowflake_partition_table('$table', '1 day', 1, retain => '2 days');
CREATE TABLE ${table}_old PARTITION OF $table
    FOR VALUES FROM (snowflake_min_id(date_trunc('day', now()) - interval '3 days'))
    TO (snowflake_min_id(date_trunc('day', now()) - interval '2 days'));
CREATE TABLE ${table}_between_1 PARTITION OF $table
    FOR VALUES FROM (snowflake_min_id(date_trunc('day', now()) - interval '2 days'))
    TO (snowflake_min_id(date_trunc('day', now()) - interval '1 day'));
CREATE TABLE ${table}_between_2 PARTITION OF $table
    FOR VALUES FROM (snowflake_min_id(date_trunc('day', now()) - interval '1 day'))
    TO (snowflake_min_id(date_trunc('day', now())))));
}
$holder->query_safe('BEGIN; LOCK TABLE held_1_old, held_2_old, held_3_old IN ACCESS SHARE MODE');
my ($timed_out, $timed_out_out, $timed_out_err) = $node->psql('postgres', q(
SET statement_timeout = '900ms';
SELECT parent || ': ' || action FROM snowflake_maintain_partitions()));
like($timed_out_err, qr/ERROR:  canceling statement due to statement timeout/,
    'a statement_timeout ends the maintenance of every table');
is($timed_out_out, '', 'which reports nothing');
my ($waited, $waited_out, $waited_err) = $node->psql('postgres', q(
SELECT parent || ': ' || action FROM snowflake_maintain_partitions()
WHERE parent::text LIKE 'held\__' ORDER BY 1));
is($waited_out, join("\n", map { "held_$_: failed: canceling statement due to lock timeout" } 1 .. 3),
    'without it, each held table waits a second for its partition, then fails alone');
like($waited_err, qr/WARNING:  time partitions of public\.held_2 were not maintained/,
    'with a warning each');
$holder->query_safe('COMMIT');
$holder->quit;
like($node->safe_psql('postgres', q(SELECT string_agg(action, ', ')
    FROM snowflake_maintain_partitions() WHERE parent = 'held_1'::regclass)),
    qr/detached/, 'and the next call maintains the tables');

$node->stop;

# pg_cron, preloaded beside the library: the README's line, run by the scheduler.
my $pkglibdir = $node->config_data('--pkglibdir');
SKIP: {
    skip "pg_cron is not installed in this PostgreSQL ($pkglibdir/pg_cron.so)", 2
      unless -e "$pkglibdir/pg_cron.so";
    my $cron = snowflake_node('cron', machine_id => 6);
    $cron->append_conf('postgresql.conf', qq(
shared_preload_libraries = 'snowflake,pg_cron'
cron.database_name = 'postgres'
cron.use_background_workers = on
max_worker_processes = 20
));
    $cron->start;
    $cron->safe_psql('postgres', q(
CREATE EXTENSION snowflake;
CREATE EXTENSION pg_cron;
CREATE TABLE events (id bigint NOT NULL DEFAULT snowflake_nextval() PRIMARY KEY, body text)
    PARTITION BY RANGE (id);
SELECT * FROM snowflake_partition_table('events', '1 hour', 1);
));
    my $before = $cron->safe_psql('postgres',
        q(SELECT count(*) FROM pg_inherits WHERE inhparent = 'events'::regclass));
    # A larger ahead in the setup, which the scheduled maintenance then fills.
    $cron->safe_psql('postgres',
        q(UPDATE snowflake_catalog.snowflake_partitioned_tables SET ahead = 4 WHERE parent = 'events'::regclass));
    $cron->safe_psql('postgres', q(
SELECT cron.schedule('snowflake-partitions', '* * * * *',
                     'CALL snowflake_run_partition_maintenance()');
));
    ok($cron->poll_query_until('postgres',
            q(SELECT count(*) = 5 FROM pg_inherits WHERE inhparent = 'events'::regclass)),
        "pg_cron's run of snowflake_run_partition_maintenance() created the partitions (from $before)");
    is($cron->safe_psql('postgres',
            q(SELECT status FROM cron.job_run_details ORDER BY runid LIMIT 1)),
        'succeeded', 'and the job succeeded');
    $cron->stop;
}

done_testing();
