# A scheduled run (CALL snowflake_run_partition_maintenance()) is fair to the roles whose tables
# it maintains (doc/security.md "A fair scheduled run"). Beside the victim's hourly table, her
# forty tables whose code sleeps two seconds once in each: the run takes one of hers, then the
# victim's (last in OID order), then perhaps a second of hers, and leaves the rest to the next
# run, since two took more than her share of three seconds. Her code that ends its session
# (exit_on_error; transaction_timeout from PostgreSQL 17) fails her table alone, and her code that
# catches every cancel is ended at the time limit. A table's name that the caller's client_encoding
# cannot show ends nothing. A cancel of the run, and the end of the run's session, end her table's
# worker too.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;

my $node = snowflake_node('fair', machine_id => 12);
$node->start;
my $her_tables = 40;
$node->safe_psql('postgres', qq(
CREATE EXTENSION snowflake;
CREATE ROLE her LOGIN;
CREATE ROLE victim LOGIN;
GRANT CREATE ON SCHEMA public TO her, victim;
SET ROLE her;
CREATE TABLE her_mode (mode text);
INSERT INTO her_mode VALUES ('none');
GRANT SELECT ON her_mode TO PUBLIC;
CREATE FUNCTION her_acts(integer) RETURNS integer LANGUAGE plpgsql IMMUTABLE AS \$\$
DECLARE
    mode text := (SELECT m.mode FROM public.her_mode AS m);
BEGIN
    IF pg_catalog.current_setting('lock_timeout') <> '1s' THEN
        RETURN \$1;
    ELSIF mode = 'sleep' AND pg_catalog.current_setting('her.slept', true) IS DISTINCT FROM 'yes'
    THEN
        PERFORM pg_catalog.set_config('her.slept', 'yes', true);
        PERFORM pg_catalog.pg_sleep(2);
    ELSIF mode = 'exit_on_error' THEN
        PERFORM pg_catalog.set_config('exit_on_error', 'on', false);
        RAISE EXCEPTION 'her code ends the session';
    ELSIF mode = 'transaction_timeout' THEN
        PERFORM pg_catalog.set_config('transaction_timeout', '1ms', false);
        PERFORM pg_catalog.pg_sleep(60);
    ELSIF mode = 'catch' THEN
        LOOP
            BEGIN
                PERFORM pg_catalog.pg_sleep(60);
            EXCEPTION WHEN query_canceled THEN
                NULL;
            END;
        END LOOP;
    END IF;
    RETURN \$1;
END
\$\$;
));
# Her tables, each with an index that runs her function when a partition's index is built, then
# the victim's, last in OID order.
$node->safe_psql('postgres', join('', map { qq(
SET ROLE her;
CREATE TABLE her_$_ (id bigint NOT NULL, v integer) PARTITION BY RANGE (id);
SELECT count(*) FROM snowflake_partition_table('her_$_', '1 day', 0);
CREATE INDEX ON her_$_ ((v + her_acts(1)));
) } 1 .. $her_tables) . q(
SET ROLE victim;
CREATE TABLE victim_hourly (id bigint NOT NULL) PARTITION BY RANGE (id);
SELECT count(*) FROM snowflake_partition_table('victim_hourly', '1 hour', 1);
));

# Each run has a partition more to make for every table.
sub one_more_ahead {
    $node->safe_psql('postgres',
        'UPDATE snowflake_catalog.snowflake_partitioned_tables SET ahead = ahead + 1');
}

# A run with her code acting as mode says, and a share of three seconds; returns what it printed.
sub run_with {
    my ($mode) = @_;
    $node->safe_psql('postgres', "UPDATE her_mode SET mode = '$mode'");
    one_more_ahead();
    my ($ret, $out, $err) = $node->psql('postgres', q(
SET snowflake.partition_owner_share = '3s';
CALL snowflake_run_partition_maintenance()), timeout => 180);
    is($ret, 0, "the run with her code's $mode ends well") or diag($err);
    like($err, qr/NOTICE:  public\.victim_hourly: created/,
        "with her code's $mode the victim's hourly table is maintained");
    return $err;
}

my $err = run_with('sleep');
# Two of her tables took more than her share, one may have (on a busy machine).
my %hers_created = map { $_ => 1 } $err =~ /NOTICE:  public\.(her_\d+): created/g;
my $hers = keys %hers_created;
ok($hers >= 1 && $hers <= 2, "one or two of her tables were maintained ($hers)");
like($err, qr/NOTICE:  public\.victim_hourly: created.*WARNING:  snowflake_run_partition_maintenance\(\) left public\.her_\d+ and the tables of role her after it to its next run: that role's tables had their share of this run/s,
    'in turns: the victim\'s table before her share ran out, and the run says it left hers');
unlike($err, qr/were not maintained/, 'and nothing failed');

$err = run_with('exit_on_error');
like($err, qr/WARNING:  time partitions of public\.her_\d+ were not maintained: the session that maintained it ended before it was done/,
    'her code that sets exit_on_error ends her table\'s session, not the run');

SKIP: {
    skip 'transaction_timeout came with PostgreSQL 17', 3 if $node->pg_version < 17;
    $err = run_with('transaction_timeout');
    like($err, qr/WARNING:  time partitions of public\.her_\d+ were not maintained: the session that maintained it ended before it was done/,
        'her code that sets transaction_timeout ends her table\'s session, not the run');
}

$err = run_with('catch');
like($err, qr/WARNING:  time partitions of public\.her_\d+ were not maintained: took longer than 10 s/,
    'her code that catches every cancel is ended at the time limit');

# A name that the caller's client_encoding cannot show is replaced, and ends nothing, in a table's
# name or in a field of her warning (the column it names): the table after them is maintained.
$node->safe_psql('postgres',
    "CREATE DATABASE utf8_names ENCODING 'UTF8' LOCALE 'C' TEMPLATE template0");
# The name is written in ASCII, as a Unicode escape.
$node->safe_psql('utf8_names', q(
CREATE EXTENSION snowflake;
CREATE TABLE U&"\6F22" (id bigint NOT NULL) PARTITION BY RANGE (id);
SELECT count(*) FROM snowflake_partition_table(
    (SELECT oid FROM pg_class WHERE relname = U&'\6F22')::regclass, '1 day', 1);
CREATE FUNCTION names_it(integer) RETURNS integer LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    RAISE WARNING 'a column named' USING COLUMN = U&'\6F22';
    RETURN $1;
END
$$;
CREATE TABLE warns (id bigint NOT NULL) PARTITION BY RANGE (id);
SELECT count(*) FROM snowflake_partition_table('warns', '1 day', 1);
CREATE INDEX ON warns ((names_it(0) + id));
CREATE TABLE after_it (id bigint NOT NULL) PARTITION BY RANGE (id);
SELECT count(*) FROM snowflake_partition_table('after_it', '1 day', 1);
UPDATE snowflake_catalog.snowflake_partitioned_tables SET ahead = 2));
my ($ret, $out);
($ret, $out, $err) = $node->psql('utf8_names',
    "SET client_encoding = 'LATIN1'; CALL snowflake_run_partition_maintenance()");
is($ret, 0, 'a run whose client cannot show a table\'s name ends well') or diag($err);
like($err, qr/NOTICE:  a message of the maintenance of the table of OID \d+ was left out: client_encoding LATIN1 cannot show it/,
    'the message that names it is left out');
like($err, qr/NOTICE:  public\.after_it: created/, 'and the table after it is maintained');

# A cancel of the run, and the end of its session, end the worker of her table.
$node->safe_psql('postgres', "UPDATE her_mode SET mode = 'catch'");
one_more_ahead();
my $cancelled = cancel_run_in_her_sleep($node);
like($cancelled, qr/ERROR:  canceling statement due to user request/, 'a cancel ends the run');
ok($node->poll_query_until('postgres', q(
SELECT NOT EXISTS (SELECT FROM pg_stat_activity
                   WHERE backend_type = 'snowflake partition maintenance'))),
    'and the worker of her table');
my $run = $node->background_psql('postgres', on_error_stop => 0);
$run->query_until(qr/started\n/, "\\echo started\nCALL snowflake_run_partition_maintenance();\n");
$node->poll_query_until('postgres', q(
SELECT EXISTS (SELECT FROM pg_stat_activity WHERE wait_event = 'PgSleep'
               AND backend_type = 'snowflake partition maintenance')))
  or die 'the run never slept in her code';
$node->safe_psql('postgres', q(
SELECT pg_terminate_backend(pid) FROM pg_stat_activity
WHERE query LIKE 'CALL snowflake_run_partition_maintenance()%' AND pid <> pg_backend_pid()));
ok($node->poll_query_until('postgres', q(
SELECT NOT EXISTS (SELECT FROM pg_stat_activity
                   WHERE backend_type = 'snowflake partition maintenance'))),
    'the end of the run\'s session ends the worker of her table');
# psql ends by itself once its connection is lost.
$run->{run}->finish;

done_testing();
