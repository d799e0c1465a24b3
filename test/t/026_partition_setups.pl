# The setup of a table for time partitions (version 1.8) through drops, dumps and the scheduler:
# a dump taken from 1.7, which wrote the rows of dropped tables as bare OIDs, restores without
# applying one to another role's table or losing the others, even when those OIDs are given to
# the restored tables; the update to 1.8 removes such rows; in 1.8 a drop takes its setup with it,
# and a row left where event triggers did not fire is left out of a restore and removed by the
# next maintenance. Then snowflake_run_partition_maintenance(): each table commits before the next
# begins, so that another role's table takes inserts while the run waits for a plain role's held
# tables; a second run of the same role meanwhile does nothing; a statement_timeout ends the run
# and frees its lock; a table whose owner's code runs past a table's time limit fails alone; it
# refuses to run read-only or in a transaction block.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;
use Time::Local qw(timegm);

my $node = snowflake_node('setups', machine_id => 9);
$node->start;
my $tmp = $PostgreSQL::Test::Utils::tmp_check;
$node->safe_psql('postgres', q(
CREATE ROLE alice LOGIN;
CREATE ROLE bob LOGIN;
CREATE DATABASE old17;
));

# In 1.7, alice sets two tables up to drop what is older than a month, and drops them; bob has a
# table set up and one with a year of monthly partitions that he manages himself.
$node->safe_psql('old17', q(
CREATE EXTENSION snowflake VERSION '1.7';
GRANT CREATE ON SCHEMA public TO alice, bob;
SET ROLE alice;
CREATE TABLE alice_gone_1 (id bigint NOT NULL) PARTITION BY RANGE (id);
CREATE TABLE alice_gone_2 (id bigint NOT NULL) PARTITION BY RANGE (id);
SELECT count(*) FROM snowflake_partition_table('alice_gone_1', '1 month', 1, '1 month', 'UTC', true);
SELECT count(*) FROM snowflake_partition_table('alice_gone_2', '1 month', 1, '1 month', 'UTC', true);
DROP TABLE alice_gone_1, alice_gone_2;
SET ROLE bob;
CREATE TABLE bob_set_up (id bigint NOT NULL) PARTITION BY RANGE (id);
SELECT count(*) FROM snowflake_partition_table('bob_set_up', '1 day', 2);
CREATE TABLE bob_own (id bigint NOT NULL) PARTITION BY RANGE (id);
DO $$
DECLARE
    start timestamptz;
BEGIN
    FOR m IN 0 .. 11 LOOP
        start := date_trunc('month', now(), 'UTC') - m * interval '1 month';
        EXECUTE format('CREATE TABLE bob_own_%s PARTITION OF bob_own FOR VALUES FROM (%s) TO (%s)',
                       m, snowflake_min_id(start), snowflake_min_id(start + interval '1 month'));
        INSERT INTO bob_own VALUES (snowflake_min_id(start));
    END LOOP;
END
$$;
));
my $left_behind = $node->safe_psql('old17', q(
SELECT string_agg(parent::oid::text, ' ' ORDER BY parent::oid) FROM snowflake_partitioned_tables AS t
WHERE NOT EXISTS (SELECT FROM pg_class WHERE oid = t.parent::oid)));
my ($gone_1, $gone_2) = split / /, $left_behind;
ok(defined $gone_2, "1.7 leaves the rows of the dropped tables behind ($left_behind)");

# The dump, restored into a database where the extension is 1.8. The two dropped tables' OIDs are
# given to bob's tables there, as a fresh cluster may: the data section, where the rows are written
# as bare numbers, gets the new OIDs of bob's tables in their place.
$node->command_ok(['pg_dump', '-Fc', '-f', "$tmp/old17.dump", '-d', $node->connstr('old17')],
    'pg_dump of the 1.7 database');
$node->safe_psql('postgres', 'CREATE DATABASE restored17');
$node->command_ok(['pg_restore', '--exit-on-error', '--section=pre-data',
        '-d', $node->connstr('restored17'), "$tmp/old17.dump"], 'its tables restore');
my ($set_up_oid, $own_oid) = split /\|/, $node->safe_psql('restored17',
    q(SELECT 'bob_set_up'::regclass::oid || '|' || 'bob_own'::regclass::oid));
$node->command_ok(['pg_restore', '--section=data', '-f', "$tmp/old17.data.sql", "$tmp/old17.dump"],
    'its data section as SQL');
my $data = slurp_file("$tmp/old17.data.sql");
ok($data =~ s/^$gone_1\t/$set_up_oid\t/m && $data =~ s/^$gone_2\t/$own_oid\t/m,
    'the dump writes the dropped tables as bare numbers, here the OIDs of bob\'s tables');
open(my $file, '>', "$tmp/old17.data.sql") or die $!;
print $file $data;
close($file);
my ($ret, $out, $err) = $node->psql('restored17', $data, on_error_stop => 1);
is($ret, 0, 'the data restores without an error') or diag($err);
is(scalar(() = $err =~ /WARNING:  left out a row of snowflake_partitioned_tables whose table is not in this database: every 1 mon, ahead 1, retain 1 mon, time zone UTC/g),
    2, 'with a warning for each row whose table was dropped');
$node->command_ok(['pg_restore', '--exit-on-error', '--section=post-data',
        '-d', $node->connstr('restored17'), "$tmp/old17.dump"], 'and its indexes');
is($node->safe_psql('restored17',
        q(SELECT parent || ' ' || every || ' ' || ahead FROM snowflake_partitioned_tables)),
    'bob_set_up 1 day 2', "bob's setup is restored, and neither of alice's is applied to his tables");
$node->safe_psql('restored17', 'SELECT count(*) FROM snowflake_maintain_partitions()');
is($node->safe_psql('restored17',
        q(SELECT count(*) || ' partitions, ' || (SELECT count(*) FROM bob_own) || ' rows'
          FROM pg_inherits WHERE inhparent = 'bob_own'::regclass)),
    '12 partitions, 12 rows', 'and maintenance leaves his own partitions alone');

# A data-only restore with the trigger disabled (pg_restore --disable-triggers) keeps the rows it
# reads as no table instead of failing on the second, and maintenance then removes them. A view
# has no triggers to disable, so such a restore of an older dump goes into 1.11, the last version
# whose table the dump names, and the update then moves the rows (doc/reference.md "The
# extension's tables").
$node->safe_psql('postgres', 'CREATE DATABASE data_only17');
$node->safe_psql('data_only17', q(CREATE EXTENSION snowflake VERSION '1.11'));
$node->command_ok(['pg_restore', '--exit-on-error', '--schema-only',
        '-d', $node->connstr('data_only17'), "$tmp/old17.dump"], 'the 1.7 dump\'s schema');
$node->command_ok(['pg_restore', '--exit-on-error', '--data-only', '--disable-triggers',
        '-d', $node->connstr('data_only17'), "$tmp/old17.dump"],
    'its data, with triggers disabled, restores without an error');
is($node->safe_psql('data_only17', q(
SELECT string_agg(parent::text, ' ' ORDER BY parent::text) FROM snowflake_partitioned_tables)),
    '- - bob_set_up', 'bob\'s setup is there, beside two rows of no table');
$node->safe_psql('data_only17', 'SELECT count(*) FROM snowflake_maintain_partitions()');
is($node->safe_psql('data_only17', q(
SELECT string_agg(parent::text, ' ') FROM snowflake_partitioned_tables)),
    'bob_set_up', 'which the maintenance of every table removes');
$node->safe_psql('data_only17', 'ALTER EXTENSION snowflake UPDATE');
is($node->safe_psql('data_only17', q(
SELECT string_agg(parent::text, ' ') FROM snowflake_catalog.snowflake_partitioned_tables)),
    'bob_set_up', 'and the update moves the setup into snowflake_catalog');

# The update to 1.8 removes the rows that 1.7 left behind; a role's view of the monitoring view
# does not stop it.
$node->safe_psql('old17', q(
SET ROLE alice;
CREATE VIEW alice_watch AS SELECT parent, time_left FROM snowflake_partition_reach));
$node->safe_psql('old17', q(ALTER EXTENSION snowflake UPDATE TO '1.8'));
is($node->safe_psql('old17', q(SELECT string_agg(parent::text, ' ') FROM snowflake_partitioned_tables)),
    'bob_set_up', 'the update to 1.8 removes the rows of dropped tables');

# In 1.8 a table's setup goes with it, whoever drops it and however.
$node->safe_psql('old17', q(
CREATE SCHEMA bob_schema AUTHORIZATION bob;
SET ROLE bob;
CREATE TABLE bob_schema.in_schema (id bigint NOT NULL) PARTITION BY RANGE (id);
CREATE TABLE dropped (id bigint NOT NULL) PARTITION BY RANGE (id);
CREATE TABLE owned (id bigint NOT NULL) PARTITION BY RANGE (id);
SELECT count(*) FROM unnest(ARRAY['bob_schema.in_schema', 'dropped', 'owned']::regclass[]) AS t,
    LATERAL snowflake_partition_table(t, '1 day', 0);
DROP TABLE dropped;
RESET ROLE;
DROP SCHEMA bob_schema CASCADE;
ALTER TABLE owned OWNER TO alice;
DROP OWNED BY alice;
));
is($node->safe_psql('old17', q(SELECT string_agg(parent::text, ' ') FROM snowflake_partitioned_tables)),
    'bob_set_up', 'DROP TABLE by a plain role, DROP SCHEMA ... CASCADE and DROP OWNED remove the setup');

# Sets a table up weekly in old17 and drops it while the event trigger is disabled, as where
# event triggers do not fire: its row is left behind.
sub leave_row_behind {
    $node->safe_psql('old17', q(
CREATE TABLE unnoticed (id bigint NOT NULL) PARTITION BY RANGE (id);
SELECT count(*) FROM snowflake_partition_table('unnoticed', '1 week', 0);
ALTER EVENT TRIGGER snowflake_forget_dropped_setups DISABLE;
DROP TABLE unnoticed;
ALTER EVENT TRIGGER snowflake_forget_dropped_setups ENABLE;
));
}

# Where the event trigger did not fire, the row a drop left is left out of a restore, and the
# next maintenance removes it.
leave_row_behind();
$node->command_ok(['pg_dump', '-Fc', '-f', "$tmp/unnoticed.dump", '-d', $node->connstr('old17')],
    'pg_dump of the 1.8 database with a row left behind');
$node->safe_psql('postgres', 'CREATE DATABASE restored18');
# pg_restore shows the server's warnings with --verbose only; the server's log has them too.
$node->command_checks_all(['pg_restore', '--verbose', '--exit-on-error',
        '-d', $node->connstr('restored18'), "$tmp/unnoticed.dump"], 0, [qr/^$/],
    [qr/WARNING:  left out a row of snowflake_partitioned_tables whose table is not in this database: every 7 days/],
    'it restores, with that row left out and a warning');
is($node->safe_psql('restored18', q(SELECT string_agg(parent::text, ' ') FROM snowflake_partitioned_tables)),
    'bob_set_up', 'the restored database has only the setup of a table that exists');
$node->safe_psql('old17', 'SELECT count(*) FROM snowflake_maintain_partitions()');
is($node->safe_psql('old17', q(SELECT string_agg(parent::text, ' ') FROM snowflake_partitioned_tables)),
    'bob_set_up', 'and the maintenance of every table removes the row left behind');

# A row left behind that one session's drop is removing, in a transaction still open, holds up
# no other session's drop.
leave_row_behind();
$node->safe_psql('old17', q(
SET ROLE bob;
CREATE TABLE bob_scratch_1 (x integer);
CREATE TABLE bob_scratch_2 (x integer);
));
my $dropper = $node->background_psql('old17');
$dropper->query_safe('SET ROLE bob; BEGIN; DROP TABLE bob_scratch_1');
($ret, $out, $err) = $node->psql('old17', q(
SET ROLE bob;
SET lock_timeout = '2s';
DROP TABLE bob_scratch_2));
is($ret, 0, 'another session\'s drop goes on past the row the first is removing') or diag($err);
$dropper->query_safe('COMMIT');
$dropper->quit;
is($node->safe_psql('old17', q(SELECT string_agg(parent::text, ' ') FROM snowflake_partitioned_tables)),
    'bob_set_up', 'and the row is gone once the first commits');

# A setup that another session makes while a DROP runs is not taken for one whose table is gone
# (an attack on 1.10's first version removed it so). The dropping statement looks up the OIDs the
# new table will get before that table exists, and then waits without taking a lock, which would
# read the catalog's changes: its catalog cache holds that no relation has those OIDs.
$node->safe_psql('old17', q(
CREATE TABLE race_dropping (a int, b int, c int);
INSERT INTO race_dropping VALUES (1, 1, 1);
CREATE TABLE race_go (go boolean NOT NULL);
INSERT INTO race_go VALUES (false);
CREATE FUNCTION race_look_ahead(integer) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    PERFORM count(*) FROM generate_series(1, 3000) AS g
    WHERE ((SELECT max(oid)::bigint FROM pg_class) + g)::oid::regclass::text IS NOT NULL;
    PERFORM pg_advisory_lock(4712);
    LOOP
        EXIT WHEN (SELECT go FROM race_go);
        PERFORM pg_sleep(0.01);
    END LOOP;
    RETURN true;
END $$;
));
$dropper = start_statement($node, 'old17', q(BEGIN;
ALTER TABLE race_dropping DROP COLUMN c;
ALTER TABLE race_dropping DROP COLUMN b, ADD CONSTRAINT looked CHECK (race_look_ahead(a));
COMMIT));
$node->poll_query_until('old17', q(SELECT count(*) = 1 FROM pg_locks
    WHERE locktype = 'advisory' AND objid = 4712 AND granted))
  or die 'the dropping statement did not look ahead';
$node->safe_psql('old17', q(
CREATE TABLE race_new (id bigint PRIMARY KEY DEFAULT snowflake_nextval()) PARTITION BY RANGE (id);
SELECT count(*) FROM snowflake_partition_table('race_new', '1 day', ahead => 1);
UPDATE race_go SET go = true;
));
finish_statement($dropper);
is($node->safe_psql('old17', q(SELECT count(*) FROM snowflake_partitioned_tables
    WHERE parent::regclass = 'race_new'::regclass)),
    '1', 'a setup made during a DROP is kept');
$node->safe_psql('old17', 'DROP TABLE race_dropping, race_go, race_new; DROP FUNCTION race_look_ahead(integer)');

# The procedure. Bob's table, maintained first (its OID is lower), has an expired partition that
# the run detaches; alice holds the expired partitions of her six tables, for each of which the
# run waits its second (lock_timeout) and goes on; bob drops his last table meanwhile. The days
# between each expired partition and the current day are made too: the retention removes nothing
# across a gap.
$node->safe_psql('postgres', q(
CREATE EXTENSION snowflake;
GRANT CREATE ON SCHEMA public TO alice, bob;
SET ROLE bob;
CREATE TABLE bob_events (id bigint NOT NULL DEFAULT snowflake_nextval()) PARTITION BY RANGE (id);
SELECT count(*) FROM snowflake_partition_table('bob_events', '1 day', 1, retain => '2 days');
SET ROLE alice;
DO $$
BEGIN
    FOR n IN 1 .. 6 LOOP
        EXECUTE format('CREATE TABLE alice_%s (id bigint NOT NULL) PARTITION BY RANGE (id)', n);
        PERFORM snowflake_partition_table(format('alice_%s', n)::regclass, '1 day', 1,
                                          retain => '2 days');
    END LOOP;
END
$$;
));
$node->safe_psql('postgres', q(
SET ROLE bob;
CREATE TABLE bob_late (id bigint NOT NULL) PARTITION BY RANGE (id);
SELECT count(*) FROM snowflake_partition_table('bob_late', '1 day', 1)));
for my $table ('bob_events', map { "alice_$_" } 1 .. 6) {
    my $owner = $table =~ /^bob/ ? 'bob' : 'alice';
    $node->safe_psql('postgres', qq(
SET ROLE $owner;
CREATE TABLE ${table}_old PARTITION OF $table
    FOR VALUES FROM (snowflake_min_id(date_trunc('day', now(), 'UTC') - interval '3 days'))
    TO (snowflake_min_id(date_trunc('day', now(), 'UTC') - interval '2 days'));
CREATE TABLE ${table}_between_1 PARTITION OF $table
    FOR VALUES FROM (snowflake_min_id(date_trunc('day', now(), 'UTC') - interval '2 days'))
    TO (snowflake_min_id(date_trunc('day', now(), 'UTC') - interval '1 day'));
CREATE TABLE ${table}_between_2 PARTITION OF $table
    FOR VALUES FROM (snowflake_min_id(date_trunc('day', now(), 'UTC') - interval '1 day'))
    TO (snowflake_min_id(date_trunc('day', now(), 'UTC')))));
}
my $alice = $node->background_psql('postgres');
$alice->query_safe(q(SET ROLE alice; BEGIN;
LOCK TABLE alice_1_old, alice_2_old, alice_3_old, alice_4_old, alice_5_old, alice_6_old
    IN ACCESS SHARE MODE));
my $run = start_statement($node, 'postgres', 'CALL snowflake_run_partition_maintenance()');
# Owners take turns (alice_1, bob_events, alice_2, ...): once the run waits for alice_2, bob's
# table is done.
ok($node->poll_query_until('postgres', q(
SELECT EXISTS (SELECT FROM pg_stat_activity WHERE wait_event_type = 'Lock'
               AND backend_type = 'snowflake partition maintenance'
               AND query LIKE 'maintaining the time partitions of public.alice_2 %'))),
    'the run waits for the partitions alice holds');
# The run lasts the six seconds of alice's tables; the check that needs it still running comes
# first.
my ($second, $second_out, $second_err) =
  $node->psql('postgres', 'CALL snowflake_run_partition_maintenance()');
like($second_err,
    qr/NOTICE:  snowflake_run_partition_maintenance\(\) did nothing: another run of it by role \S+ is in progress/,
    'a second run of the same role does nothing');
my ($insert, $insert_out, $insert_err) = $node->psql('postgres', q(
SET ROLE bob;
SET lock_timeout = '300ms';
INSERT INTO bob_events DEFAULT VALUES RETURNING 'inserted'));
is($insert_out, 'inserted', 'meanwhile an insert into bob\'s table, detached before, is not held back')
  or diag($insert_err);
$node->safe_psql('postgres', 'SET ROLE bob; DROP TABLE bob_late');
my ($bob_run, $bob_out, $bob_err) = $node->psql('postgres', q(
SET ROLE bob;
CALL snowflake_run_partition_maintenance()));
like($bob_err, qr/NOTICE:  public\.bob_events: nothing to do/,
    'while another role\'s run goes on, maintaining that role\'s tables');
$run->query('SELECT 1');
my $notices = $run->{stderr};
like($notices, qr/NOTICE:  public\.bob_events: detached \(older than the retention\) public\.bob_events_old/,
    'the run detached bob\'s expired partition');
is(scalar(() = $notices =~ /NOTICE:  public\.alice_\d: failed: canceling statement due to lock timeout/g), 6,
    'and each of alice\'s held tables cost it a second, then failed alone');
unlike($notices, qr/does not exist/, 'a table dropped during the run is left out without a word');
$run->quit;

# A statement_timeout ends the run, and its lock with it, though the session it ran in goes on. It
# is shorter than the second the run waits for alice's first table: it runs out within that wait,
# and never after a lock_timeout that has run out too (PostgreSQL would then report the
# lock_timeout alone).
my $timed = $node->background_psql('postgres', on_error_stop => 0);
$timed->query(q(SET statement_timeout = '900ms'; CALL snowflake_run_partition_maintenance()));
like($timed->{stderr}, qr/ERROR:  canceling statement due to statement timeout/,
    'a statement_timeout ends the run');
$alice->query_safe('COMMIT');
$alice->quit;
($ret, $out, $err) = $node->psql('postgres', 'CALL snowflake_run_partition_maintenance()');
like($err, qr/NOTICE:  public\.alice_6: detached/,
    'and a run in another session starts while that session lasts');
$timed->quit;

# A plain role cannot hold a run's lock by hand: no SQL function takes its kind of advisory lock.
my $squatter = $node->background_psql('postgres');
$squatter->query_safe(q(
SELECT pg_advisory_lock('snowflake_partitioned_tables'::regclass::oid::text::int,
                        (SELECT oid FROM pg_roles WHERE rolname = current_user)::text::int);
SELECT pg_advisory_lock(('snowflake_partitioned_tables'::regclass::oid::bigint << 32)
                        | (SELECT oid FROM pg_roles WHERE rolname = current_user)::bigint);
SET ROLE bob;
SELECT pg_advisory_lock('snowflake_partitioned_tables'::regclass::oid::text::int,
                        (SELECT oid FROM pg_roles WHERE rolname = session_user)::text::int)));
($ret, $out, $err) = $node->psql('postgres', 'CALL snowflake_run_partition_maintenance()');
like($err, qr/NOTICE:  public\.bob_events: nothing to do/,
    'advisory locks taken with the run\'s keys by SQL do not keep it from running');
$squatter->quit;

# Her code that runs past the time limit of one table (an index expression that sleeps when a new
# partition's index is built under the maintenance of every table) fails her table alone; the
# run goes on to the tables after hers.
$node->safe_psql('postgres', q(
SET ROLE alice;
CREATE FUNCTION alice_sleeps(integer) RETURNS integer LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    IF pg_catalog.current_setting('lock_timeout') = '1s' THEN
        PERFORM pg_catalog.pg_sleep(60);
    END IF;
    RETURN $1;
END
$$;
CREATE TABLE alice_slow (id bigint NOT NULL, v integer) PARTITION BY RANGE (id);
SELECT count(*) FROM snowflake_partition_table('alice_slow', '1 day', 0);
CREATE INDEX ON alice_slow ((v + alice_sleeps(1)));
SET ROLE bob;
CREATE TABLE bob_after_slow (id bigint NOT NULL) PARTITION BY RANGE (id);
SELECT count(*) FROM snowflake_partition_table('bob_after_slow', '1 day', 0);
RESET ROLE;
UPDATE snowflake_partitioned_tables SET ahead = 1
WHERE parent IN ('alice_slow'::regclass, 'bob_after_slow'::regclass)));
($ret, $out, $err) = $node->psql('postgres', 'CALL snowflake_run_partition_maintenance()');
like($err, qr/WARNING:  time partitions of public\.alice_slow were not maintained: took longer than 10 s/,
    'a table whose owner\'s code runs past the limit fails alone');
like($err, qr/NOTICE:  public\.bob_after_slow: created/, 'and the run goes on past it');

# Her code that catches a cancel and sleeps on runs in her table's worker, which the run ends at
# the limit: her table fails alone all the same.
$node->safe_psql('postgres', q(
SET ROLE alice;
CREATE OR REPLACE FUNCTION alice_sleeps(integer) RETURNS integer LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    IF pg_catalog.current_setting('lock_timeout') = '1s' THEN
        BEGIN
            PERFORM pg_catalog.pg_sleep(60);
        EXCEPTION WHEN query_canceled THEN
            NULL;
        END;
        PERFORM pg_catalog.pg_sleep(60);
    END IF;
    RETURN $1;
END
$$;
RESET ROLE;
UPDATE snowflake_partitioned_tables SET ahead = ahead + 1
WHERE parent IN ('alice_slow'::regclass, 'bob_after_slow'::regclass)));
($ret, $out, $err) = $node->psql('postgres', 'CALL snowflake_run_partition_maintenance()');
like($err, qr/WARNING:  time partitions of public\.alice_slow were not maintained: took longer than 10 s/,
    'her code that catches the limit\'s cancel and goes on fails alone too');
like($err, qr/NOTICE:  public\.bob_after_slow: created/, 'and the run goes on past it');

# A cancel of the run while her code sleeps in her table's worker ends the run, and the worker,
# at once: the tables after hers are left to the next run.
$node->safe_psql('postgres', q(
UPDATE snowflake_partitioned_tables SET ahead = ahead + 1
WHERE parent IN ('alice_slow'::regclass, 'bob_after_slow'::regclass)));
my $cancelled = cancel_run_in_her_sleep($node);
like($cancelled, qr/ERROR:  canceling statement due to user request/,
    'a cancel of the run while her code sleeps ends the run');
unlike($cancelled, qr/user request.*NOTICE/s, 'and no table after hers is maintained');

like(error_of($node, q(SET default_transaction_read_only = on;
CALL snowflake_run_partition_maintenance())),
    qr/ERROR:  25006: snowflake_run_partition_maintenance\(\) cannot run in a read-only transaction/,
    'it refuses to run read-only');
like(error_of($node, q(BEGIN; CALL snowflake_run_partition_maintenance())),
    qr/ERROR:  25001: snowflake_run_partition_maintenance\(\) commits after each table and cannot run inside a transaction block/,
    'it refuses to run inside a transaction block');

$node->stop;

# Hourly partitions in Australia/Lord_Howe, whose clocks go back half an hour on 4 April 2027
# (02:00 to 01:30 local, 15:00 UTC), kept by a maintenance every hour with a retention of two
# hours on a server whose clock starts three hours before the change: once the retention has
# dropped every partition from before it, the boundaries computed from the oldest one left still
# line up, and inserts find their partition. Each hour's row goes in after its maintenance, so the
# retention counts back from the row of the hour before: it keeps one partition more than the
# clock alone would, seven.
SKIP: {
    skip 'libfaketime is not installed', 3 unless have_libfaketime();
    my $howe = snowflake_node('lord_howe', machine_id => 10);
    my $clock_file = "$tmp/lord_howe_clock";
    my $start = timegm(0, 0, 12, 3, 3, 2027);
    set_clock_offset($clock_file, sprintf('%+d', $start - time()));
    start_with_clock($howe, $clock_file);
    $howe->safe_psql('postgres', q(
CREATE EXTENSION snowflake;
CREATE TABLE howe (id bigint NOT NULL DEFAULT snowflake_nextval()) PARTITION BY RANGE (id);
SELECT count(*) FROM snowflake_partition_table('howe', '1 hour', 3, retain => '2 hours',
                                               time_zone => 'Australia/Lord_Howe',
                                               drop_expired => true)));
    my @failures;
    for my $hour (1 .. 8) {
        set_clock_offset($clock_file, sprintf('%+d', $start + 3600 * $hour - time()));
        my ($ret, $out, $err) = $howe->psql('postgres', q(
SELECT string_agg(action, ', ') FROM snowflake_maintain_partitions('howe');
INSERT INTO howe DEFAULT VALUES;));
        push @failures, "hour $hour: $err" if $ret != 0;
    }
    is(join("\n", @failures), '', 'every hour\'s maintenance and insert worked across the change');
    is($howe->safe_psql('postgres', q(
SELECT count(*) FROM snowflake_partition_ranges('howe')
WHERE upper_id <= snowflake_min_id('2027-04-03 15:00 UTC'))), '0',
        'and no partition from before the change is left');
    is($howe->safe_psql('postgres', q(
SELECT string_agg(to_char(ends - starts, 'HH24:MI'), ' ' ORDER BY starts)
FROM snowflake_partition_ranges('howe'))), '01:00 01:00 01:00 01:00 01:00 01:00 01:00',
        'the partitions left are whole local hours');
    $howe->stop;
}

done_testing();
