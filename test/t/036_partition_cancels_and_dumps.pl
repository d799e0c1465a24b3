# The maintenance of every table in the caller's session (snowflake_maintain_partitions() with no
# argument; the scheduled run's workers are 037's) tells a cancel of the caller's from the table
# owner's own doing, and a selective dump's table gets its setup back. Her code that waits for a
# lock held by her other session, until the step's lock_timeout, catches that and raises
# query_canceled itself, fails her table alone: a lock_timeout signals its own process, as a
# statement_timeout does, but is not taken for a cancel of the caller's. Her code that catches the
# time limit's cancel and ends well fails her table all the same. A cancel of the caller's that
# her code catches, in a table that then ends in time, ends the call once her table is done with.
# A dump of one table or schema carries no setup; the call that snowflake_partition_setup_sql()
# prints sets the restored table up again.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;

my $node = snowflake_node('runs', machine_id => 11);
$node->start;
my $tmp = $PostgreSQL::Test::Utils::tmp_check;
$node->safe_psql('postgres', q(
CREATE EXTENSION snowflake;
CREATE ROLE alice LOGIN;
CREATE ROLE bob LOGIN;
GRANT CREATE ON SCHEMA public TO alice, bob;
SET ROLE alice;
CREATE TABLE alice_first (id bigint NOT NULL, v integer) PARTITION BY RANGE (id);
SELECT count(*) FROM snowflake_partition_table('alice_first', '1 day', 0);
SET ROLE bob;
CREATE TABLE bob_after (id bigint NOT NULL) PARTITION BY RANGE (id);
SELECT count(*) FROM snowflake_partition_table('bob_after', '1 day', 0);
));

# Each run has a partition more to make for both tables, so that a new partition's index runs her
# index expression; her function acts only under the run's lock_timeout of one second.
sub one_more_ahead {
    $node->safe_psql('postgres', q(
UPDATE snowflake_catalog.snowflake_partitioned_tables SET ahead = ahead + 1
WHERE parent IN ('alice_first'::regclass, 'bob_after'::regclass)));
}

# Her function, immutable so that a new partition's index build evaluates it, with the body given.
sub her_index_function {
    my ($body) = @_;
    $node->safe_psql('postgres', qq(
SET ROLE alice;
CREATE OR REPLACE FUNCTION alice_acts(integer) RETURNS integer LANGUAGE plpgsql IMMUTABLE AS \$\$
BEGIN
    IF pg_catalog.current_setting('lock_timeout') = '1s' THEN
        $body
    END IF;
    RETURN \$1;
END
\$\$;
CREATE INDEX IF NOT EXISTS alice_first_acts ON alice_first ((v + alice_acts(1)));
));
}

# Her other session holds the advisory lock her code waits for.
her_index_function(q(
        BEGIN
            PERFORM pg_catalog.pg_advisory_lock(47);
        EXCEPTION WHEN lock_not_available THEN
            RAISE EXCEPTION 'not a cancel of the caller''s' USING ERRCODE = 'query_canceled';
        END;));
my $holder = $node->background_psql('postgres');
$holder->query_safe('SET ROLE alice; SELECT pg_advisory_lock(47)');
one_more_ahead();
my $maintain_every_table = 'SELECT * FROM snowflake_maintain_partitions()';
my ($ret, $out, $err) = $node->psql('postgres', $maintain_every_table);
is($ret, 0, 'the call ends well') or diag($err);
like($err, qr/WARNING:  time partitions of public\.alice_first were not maintained: not a cancel of the caller's/,
    'her table fails alone, its lock_timeout not taken for a cancel of the caller\'s');
like($out, qr/^bob_after\|\S+\|created$/m, 'and the call goes on past it');
$holder->quit;

# Her code that catches the time limit's cancel and then ends well fails her table all the same:
# it ran past the limit.
her_index_function(q(
        BEGIN
            PERFORM pg_catalog.pg_sleep(60);
        EXCEPTION WHEN query_canceled THEN
            NULL;
        END;));
one_more_ahead();
($ret, $out, $err) = $node->psql('postgres', $maintain_every_table);
is($ret, 0, 'the call ends well') or diag($err);
like($err, qr/WARNING:  time partitions of public\.alice_first were not maintained: took longer than 10 s/,
    'her table that caught the limit\'s cancel and ended well fails all the same');
like($out, qr/^bob_after\|\S+\|created$/m, 'and the call goes on past it');

# A cancel of the call that her code catches, in a table that then ends in time.
one_more_ahead();
my $cancelled = cancel_run_in_her_sleep($node, $maintain_every_table);
# Her code may catch the cancel in her table's last step, or meet the limit's cancel after it.
like($cancelled,
    qr/ERROR:  (canceling statement due to user request|canceling the maintenance of every table: a cancel came while public\.alice_first was maintained)/,
    'a cancel her code caught ends the call once her table is done with');

# A dump of one table or one schema carries no setup (only a dump of the whole database does):
# the call that snowflake_partition_setup_sql() printed beforehand sets the restored table up
# again, adopting its partitions.
$node->safe_psql('postgres', q(
CREATE DATABASE picked_from;
CREATE DATABASE picked_into;
));
$node->safe_psql('picked_from', q(
CREATE EXTENSION snowflake;
CREATE SCHEMA kept;
CREATE TABLE kept.picked (id bigint NOT NULL DEFAULT snowflake_nextval()) PARTITION BY RANGE (id);
SELECT count(*) FROM snowflake_partition_table('kept.picked', '3 months', 2, '2 years',
                                               'Europe/Berlin');
INSERT INTO kept.picked DEFAULT VALUES;
));
my $setup_sql = $node->safe_psql('picked_from', q(SELECT snowflake_partition_setup_sql('kept.picked')));
$setup_sql =~ s/;\z//;
$node->safe_psql('picked_into', 'CREATE EXTENSION snowflake');
for my $selection (['-t', 'kept.picked*'], ['-n', 'kept']) {
    # A dump of tables leaves their schema out.
    $node->safe_psql('picked_into', 'DROP SCHEMA IF EXISTS kept CASCADE');
    $node->safe_psql('picked_into', 'CREATE SCHEMA kept') if $selection->[0] eq '-t';
    $node->command_ok(['pg_dump', '-Fc', '-f', "$tmp/picked.dump", @$selection,
            '-d', $node->connstr('picked_from')], "pg_dump $selection->[0]");
    $node->command_ok(['pg_restore', '--exit-on-error', '-d', $node->connstr('picked_into'),
            "$tmp/picked.dump"], "pg_restore of the dump of $selection->[0]");
    is($node->safe_psql('picked_into', q(SELECT count(*) FROM snowflake_partitioned_tables)), '0',
        "pg_dump $selection->[0] carries no setup");
    is($node->safe_psql('picked_into', qq(
SELECT string_agg(action, ' ') FROM ($setup_sql) AS r WHERE action <> 'adopted';
SELECT count(*) FROM snowflake_partitioned_tables WHERE parent = 'kept.picked'::regclass
    AND every = '3 months' AND ahead = 2 AND retain = '2 years' AND time_zone = 'Europe/Berlin';
SELECT count(*) FROM kept.picked)), "\n1\n1",
        'the printed call sets it up again, adopting every partition, and its row is there');
}


$node->stop;
done_testing();
