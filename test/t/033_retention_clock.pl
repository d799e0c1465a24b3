# The retention of time partitions beside a clock that is off: a clock a day ahead of every key
# expires nothing that the keys do not, in the function and in the procedure, and says so with
# the clock's reading and the newest key's time; once a row is inserted at that clock, the
# retention follows it, as the ids do (the documented limit); and a clock decades ahead is named
# when it makes the boundaries too many.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;

plan skip_all => 'libfaketime is not installed' unless have_libfaketime();

my $clock_file = "$PostgreSQL::Test::Utils::tmp_check/clock_offset_033";
my $node = snowflake_node('retention_clock', machine_id => 23);
start_with_clock($node, $clock_file);

# Two tables, one for the function and one for the procedure: hourly partitions, 3 hours kept,
# expired partitions dropped. Each has an old row, 6 hours back, in a partition made by hand.
$node->safe_psql('postgres', 'CREATE EXTENSION snowflake');
for my $table ('by_function', 'by_procedure') {
    $node->safe_psql('postgres', qq(
CREATE TABLE $table (id bigint NOT NULL DEFAULT snowflake_nextval() PRIMARY KEY, body text)
    PARTITION BY RANGE (id);
CREATE TABLE ${table}_old PARTITION OF $table
    FOR VALUES FROM (snowflake_min_id(date_trunc('hour', now()) - interval '6 hours'))
    TO (snowflake_min_id(date_trunc('hour', now()) - interval '5 hours'));
INSERT INTO $table VALUES
    (snowflake_min_id(date_trunc('hour', now()) - interval '6 hours') + 1, 'old');
SELECT count(*) FROM snowflake_partition_table('$table', '1 hour', 3);
INSERT INTO $table (body) SELECT 'right clock ' || i FROM generate_series(1, 100) AS i;
));
    # At the right clock, the retention drops the old hour, with its row, as it always did.
    my $report = $node->safe_psql('postgres', qq(
SELECT partition || ': ' || action FROM snowflake_partition_table('$table', '1 hour', 3,
    retain => '3 hours', drop_expired => true) WHERE action LIKE 'detached%'));
    like($report, qr/^public\.${table}_old: detached and dropped \(older than the retention\)$/m,
        "$table: at the right clock, the old hour is dropped");
    is($node->safe_psql('postgres', "SELECT count(*) FROM $table"),
        '100', "$table: the 100 rows made at the right clock are left");
}

# The partitions that hold rows (one, or two if an hour began among the inserts), qualified as
# the report names them, to check that none goes.
sub partitions_with_rows {
    my ($table) = @_;
    return $node->safe_psql('postgres', qq(
SELECT string_agg(DISTINCT 'public.' || tableoid::regclass::text, ' ') FROM $table));
}
my %holding = map { $_ => partitions_with_rows($_) } 'by_function', 'by_procedure';

# The clock one day ahead: one maintenance run.
set_clock_offset($clock_file, '+86400');
$node->poll_query_until('postgres', q(
SELECT now() > snowflake_timestamp((SELECT max(id) FROM by_function)) + interval '23 hours'))
  or die 'the server does not see the clock a day ahead';

my ($ret, $out, $err) = $node->psql('postgres', q(
SELECT coalesce(partition, '-') || ': ' || action FROM snowflake_maintain_partitions('by_function')
ORDER BY 1));
is($ret, 0, 'the function runs with the clock a day ahead');
is($node->safe_psql('postgres', 'SELECT count(*) FROM by_function'),
    '100', 'the function leaves every row made at the right clock');
unlike($out, qr/dropped/, 'and drops no partition');
for my $partition (split / /, $holding{by_function}) {
    like($out,
        qr/^\Q$partition\E: kept \(older than the retention by the clock, not by the newest key\)$/m,
        "its report names $partition, which the newest key keeps");
}
like($err,
    qr/WARNING:  the retention of public\.by_function keeps \d+ partitions? that the clock alone would expire/,
    'a warning says the retention was held back');
like($err,
    qr/DETAIL:  The clock reads \d{4}-\d\d-\d\d [\d:.+-]+, [^\n]* after the newest key, which is from \d{4}-\d\d-\d\d/,
    'with the clock reading and the newest key time');
like($err, qr/HINT:  Check the server's clock first\./, 'and the hint says to check the clock');

my ($call_ret, $call_out, $call_err) =
  $node->psql('postgres', 'CALL snowflake_run_partition_maintenance()');
is($call_ret, 0, 'the procedure runs with the clock a day ahead');
is($node->safe_psql('postgres', 'SELECT count(*) FROM by_procedure'),
    '100', 'the procedure leaves every row made at the right clock');
unlike($call_err, qr/dropped/, 'and drops no partition');
for my $partition (split / /, $holding{by_procedure}) {
    like($call_err,
        qr/NOTICE:  public\.by_procedure: kept \(older than the retention by the clock, not by the newest key\) \Q$partition\E\n/,
        "its notice names $partition, which the newest key keeps");
}
like($call_err,
    qr/WARNING:  the retention of public\.by_procedure keeps \d+ partitions? that the clock alone would expire/,
    'with a warning');
for my $table ('by_function', 'by_procedure') {
    is(partitions_with_rows($table), $holding{$table},
        "$table: every partition that holds rows is still attached");
}

# The documented limit: once a row is made at the clock ahead, the retention follows it and
# drops what is more than 3 hours older than that row.
my $ahead_id = $node->safe_psql('postgres',
    q(INSERT INTO by_function (body) VALUES ('ahead') RETURNING id));
my $report = $node->safe_psql('postgres', q(
SELECT partition || ': ' || action FROM snowflake_maintain_partitions('by_function')
WHERE action LIKE 'detached%'));
for my $partition (split / /, $holding{by_function}) {
    like($report, qr/^\Q$partition\E: detached and dropped \(older than the retention\)$/m,
        "a row made at the clock ahead lets the retention drop $partition");
}
is($node->safe_psql('postgres', 'SELECT string_agg(id::text, \' \') FROM by_function'),
    $ahead_id, 'the rows made at the right clock went with them');

# A clock decades ahead: too many boundaries, and the clock is named.
set_clock_offset($clock_file, '@2060-01-01 00:00:00');
$node->poll_query_until('postgres', q(SELECT now() > '2059-12-31'))
  or die 'the server does not see the clock in 2060';
$err = error_of($node, q(SELECT * FROM snowflake_maintain_partitions('by_procedure')));
like($err,
    qr/ERROR:  54000: the clock reads 2060-01-01 [\d:.+-]+, [^\n]* after the end of the newest partition of public\.by_procedure/,
    'a clock decades ahead is named, with 54000');
like($err, qr/HINT:  Check the server's clock first\./, 'and the hint says to check it first');
($call_ret, $call_out, $call_err) =
  $node->psql('postgres', 'CALL snowflake_run_partition_maintenance()');
like($call_err,
    qr/WARNING:  time partitions of public\.by_procedure were not maintained: the clock reads 2060-01-01/,
    'the procedure names the clock too');
is($node->safe_psql('postgres', 'SELECT count(*) FROM by_procedure'),
    '100', 'and changes nothing');

$node->stop;
done_testing();
