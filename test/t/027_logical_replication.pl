# The extension beside logical replication (version 1.10): a publisher that publishes every table,
# the extension's configuration table among them, to a subscriber that has the extension and time
# partitions of its own. DDL of every kind on both sides works, the subscriber keeps its own
# setups whatever the publisher's do, replication never stops on them (a second subscription, in
# binary mode, copies the configuration table too), and a standby of the publisher refuses
# maintenance with a message that names the primary.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;

my $events = 'CREATE TABLE events (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), body text) '
  . 'PARTITION BY RANGE (id)';
my $notes = 'CREATE TABLE notes (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), body text)';

my $publisher = snowflake_node('publisher', allows_streaming => 'logical', machine_id => 1);
$publisher->start;
$publisher->safe_psql('postgres', qq(
CREATE EXTENSION snowflake;
$events;
$notes;
SELECT count(*) FROM snowflake_partition_table('events', '1 day', ahead => 1);
CREATE PUBLICATION everything FOR ALL TABLES WITH (publish_via_partition_root = true);
));

# The subscriber's own partitions of the same table, a day further ahead.
my $subscriber = snowflake_node('subscriber', machine_id => 2);
$subscriber->start;
$subscriber->safe_psql('postgres', qq(
CREATE EXTENSION snowflake;
$events;
$notes;
SELECT count(*) FROM snowflake_partition_table('events', '1 day', ahead => 2);
));
my $setups = q(SELECT string_agg(parent::text || ' ahead ' || ahead, ', ' ORDER BY parent::text)
FROM snowflake_catalog.snowflake_partitioned_tables);
my $connection = 'host=' . $publisher->host . ' port=' . $publisher->port . ' dbname=postgres';
$subscriber->safe_psql('postgres',
    "CREATE SUBSCRIPTION everything CONNECTION '$connection' PUBLICATION everything");
$subscriber->wait_for_subscription_sync($publisher, 'everything');
# The binary form of the configuration table's column, which 1.9's type lacked: a subscription in
# binary mode never finished copying the table (on PostgreSQL 16 and later).
$subscriber->safe_psql('postgres', 'CREATE DATABASE in_binary');
$subscriber->safe_psql('in_binary', qq(CREATE EXTENSION snowflake; $events; $notes;
SELECT count(*) FROM snowflake_partition_table('events', '1 day', ahead => 2)));
$subscriber->safe_psql('in_binary',
    "CREATE SUBSCRIPTION in_binary CONNECTION '$connection' PUBLICATION everything WITH (binary = true)");
$subscriber->wait_for_subscription_sync($publisher, 'in_binary', 'in_binary');
is($subscriber->safe_psql('in_binary', $setups), 'events ahead 2',
    'a subscription in binary mode copies the configuration table, and skips its rows');

is($subscriber->safe_psql('postgres', $setups), 'events ahead 2',
    "the initial copy of the publisher's setups left the subscriber's own");

# DDL of every kind on the publisher, a setup made, changed and dropped with its table, rows.
$publisher->safe_psql('postgres', q(
ALTER TABLE notes ADD COLUMN extra int;
ALTER TABLE notes DROP COLUMN extra;
CREATE INDEX notes_body ON notes (body);
DROP INDEX notes_body;
CREATE VIEW recent AS SELECT * FROM notes;
DROP VIEW recent;
CREATE TABLE logs (id bigint PRIMARY KEY DEFAULT snowflake_nextval()) PARTITION BY RANGE (id);
SELECT count(*) FROM snowflake_partition_table('logs', '1 hour', ahead => 1);
SELECT count(*) FROM snowflake_partition_table('events', '1 day', ahead => 2);
SELECT count(*) FROM snowflake_partition_table('events', '1 day', ahead => 3);
DROP TABLE logs;
CREATE PUBLICATION another FOR ALL TABLES;
DROP PUBLICATION another;
INSERT INTO events (body) SELECT 'event ' || n FROM generate_series(1, 100) AS n;
INSERT INTO notes (body) VALUES ('a note');
));
is($publisher->safe_psql('postgres', $setups), 'events ahead 3',
    'the publisher changed its setup and dropped a set-up table');
$publisher->wait_for_catchup('everything');
$publisher->wait_for_catchup('in_binary');
is($subscriber->safe_psql('postgres', $setups), 'events ahead 2',
    "the publisher's inserts, updates and deletes of setups left the subscriber's own");
is($subscriber->safe_psql('postgres', 'SELECT count(*) FROM events'), '100',
    'the rows of the set-up table reached the subscriber');
is( $subscriber->safe_psql('postgres',
        q(SELECT count(*) FROM pg_stat_subscription WHERE subname = 'everything' AND pid IS NOT NULL)),
    '1', 'the apply worker still runs');
is($subscriber->safe_psql('in_binary', 'SELECT count(*) FROM events'), '100',
    'and so does the one in binary mode');

# The subscriber's own DDL and maintenance.
$subscriber->safe_psql('postgres', q(
CREATE TABLE own (id bigint PRIMARY KEY DEFAULT snowflake_nextval()) PARTITION BY RANGE (id);
SELECT count(*) FROM snowflake_partition_table('own', '1 day');
SELECT count(*) FROM snowflake_maintain_partitions();
DROP TABLE own;
));
is($subscriber->safe_psql('postgres', $setups), 'events ahead 2',
    "the subscriber's own setups are made and removed as on any server");

# pg_dump of both sides holds each one's own setup.
for my $node ($publisher, $subscriber) {
    my ($dump, $stderr) = run_command([ 'pg_dump', '--data-only',
            '--table=snowflake_catalog.snowflake_partitioned_tables', '--dbname=' . $node->connstr('postgres') ]);
    my $ahead = $node == $publisher ? 3 : 2;
    like($dump, qr/^public\.events\t1 day\t$ahead\t/m,
        'pg_dump of the ' . $node->name . ' holds its own setup');
}

# A table tracked on both sides (1.12): the subscriber stamps the changes it applies with
# versions of its own, keeps its own tombstones, and skips the publisher's tracking and
# tombstones, whose OIDs and versions are the publisher's.
$_->safe_psql('postgres', q(SELECT snowflake_track_changes('notes')))
  for $publisher, $subscriber;
$subscriber->safe_psql('in_binary', q(SELECT snowflake_track_changes('notes')));
$publisher->safe_psql('postgres', q(
INSERT INTO notes (body) SELECT 'tracked ' || g FROM generate_series(1, 10) AS g;
UPDATE notes SET body = 'changed' WHERE body = 'tracked 1';
DELETE FROM notes WHERE body IN ('tracked 2', 'tracked 3');
));
$publisher->wait_for_catchup($_) for 'everything', 'in_binary';
my $changes = q(SELECT string_agg(kind || ':' || coalesce((data).body, '-'), ',' ORDER BY version)
    FROM snowflake_changes(NULL::notes, (SELECT tracked_from FROM snowflake_catalog.snowflake_tracked_tables
                                         WHERE tracked = 'notes'::regclass), 1000)
    WHERE kind <> 'next');
my $from_publisher = $publisher->safe_psql('postgres', $changes);
is($subscriber->safe_psql('postgres', $changes), $from_publisher,
    "a subscriber's reader reads the changes it applied, as the publisher's reader does");
is($subscriber->safe_psql('postgres', q(SELECT count(*) FROM notes AS s WHERE
    snowflake_machine_id(s.version) <> 2 AND (s.body LIKE 'tracked%' OR s.body = 'changed'))), '0',
    'the subscriber stamped every applied row with a version of its own');
is($subscriber->safe_psql('postgres', q(SELECT count(*) FROM snowflake_catalog.snowflake_tombstones
    WHERE snowflake_machine_id(version) <> 2)), '0',
    "and kept its own tombstones, none of the publisher's");

# A standby of the publisher: the calls that write refuse, naming the primary.
$publisher->backup('backup');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($publisher, 'backup', has_streaming => 1);
$standby->start;
$publisher->wait_for_catchup($standby);
for my $call ("SELECT * FROM snowflake_partition_table('events', '1 day')",
    'SELECT * FROM snowflake_maintain_partitions()',
    'CALL snowflake_run_partition_maintenance()') {
    like(error_of($standby, $call), qr/ERROR:  25006: .* cannot run on a standby.*HINT:  Run it on the primary/s,
        "on a standby: $call");
}

$_->stop for $standby, $subscriber, $publisher;
done_testing();
