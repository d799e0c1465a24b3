# The retention of time partitions beside a clock that is off: a clock a day ahead of every key
# expires nothing that the keys do not, in the function and in the procedure, and says so with
# the clock's reading and the newest key's time; once rows are inserted at that clock, the gap
# its step left in the partitions still keeps the rows made at the right clock, with a report row
# and a warning that name the gap; a step within the partitions made ahead leaves no gap, and the
# retention works as before; maintenance stopped for longer than them leaves a gap too, which
# keeps the old partitions until one of the hinted ways out is taken; and a clock decades ahead
# is named when it makes the boundaries too many.
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
    my ($table, $where) = @_;
    $where //= 'true';
    return $node->safe_psql('postgres', qq(
SELECT string_agg(DISTINCT 'public.' || tableoid::regclass::text, ' ') FROM $table WHERE $where));
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
        qr/NOTICE:  public\.by_procedure: kept \(older than the retention by the clock, not by the newest key\) \Q$partition\E$/m,
        "its notice names $partition, which the newest key keeps");
}
like($call_err,
    qr/WARNING:  the retention of public\.by_procedure keeps \d+ partitions? that the clock alone would expire/,
    'with a warning');
for my $table ('by_function', 'by_procedure') {
    is(partitions_with_rows($table), $holding{$table},
        "$table: every partition that holds rows is still attached");
}

# The gap that the step left, as snowflake_partition_ranges() shows the partitions: the end of
# the newest partition before it and the start of the oldest after it, in UTC (the tables' zone),
# as a report row writes them; empty where the partitions meet.
sub gap_of {
    my ($on, $dbname, $table) = @_;
    return $on->safe_psql($dbname, qq(
SELECT to_char(before_end AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS+00') || ' to '
       || to_char(starts AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS+00')
FROM (SELECT starts, lag(ends) OVER (ORDER BY starts) AS before_end
      FROM snowflake_partition_ranges('$table')) AS r
WHERE before_end < starts ORDER BY starts DESC LIMIT 1));
}

# A busy table: rows go in at the clock a day ahead. The gap its step left between the hours
# made at the right clock and those made after the step still keeps them, however new the
# newest key: one run of the function, then one of the procedure.
for my $table ('by_function', 'by_procedure') {
    $node->safe_psql('postgres', qq(
INSERT INTO $table (body) SELECT 'ahead ' || i FROM generate_series(1, 100) AS i));
}
my %gap = map { $_ => gap_of($node, 'postgres', $_) } 'by_function', 'by_procedure';
like($gap{$_}, qr/^\d{4}-\d\d-\d\d \d\d:00:00\+00 to \d{4}-\d\d-\d\d \d\d:00:00\+00$/,
    "$_: the step left a gap in the partitions") for 'by_function', 'by_procedure';
($ret, $out, $err) = $node->psql('postgres', q(
SELECT coalesce(partition, '-') || ': ' || action FROM snowflake_maintain_partitions('by_function')
ORDER BY 1));
is($ret, 0, 'the function runs once rows were made at the clock ahead');
unlike($out, qr/dropped/, 'it drops no partition');
for my $partition (split / /, $holding{by_function}) {
    like($out,
        qr/^\Q$partition\E: kept \(a gap in the partitions from \Q$gap{by_function}\E lies between it and now\)$/m,
        "its report names $partition, which the gap keeps");
}
like($err,
    qr/WARNING:  the retention of public\.by_function keeps \d+ partitions? before a gap in its partitions/,
    'a warning says the gap kept partitions');
like($err, qr/DETAIL:  No partition holds the time from \Q$gap{by_function}\E\./,
    'it names the gap');
like($err,
    qr/A step of the clock ahead, or a stop of maintenance, leaves such a gap when the clock passes the end of the partitions made ahead by a whole hour or more\./,
    'and what leaves one');
like($err, qr/HINT:  Check the server's clock first\. If it is right,/,
    'the hint says to check the clock first');
($call_ret, $call_out, $call_err) =
  $node->psql('postgres', 'CALL snowflake_run_partition_maintenance()');
is($call_ret, 0, 'the procedure runs too');
unlike($call_err, qr/dropped/, 'and drops no partition');
for my $partition (split / /, $holding{by_procedure}) {
    like($call_err,
        qr/NOTICE:  public\.by_procedure: kept \(a gap in the partitions from \Q$gap{by_procedure}\E lies between it and now\) \Q$partition\E$/m,
        "its notice names $partition, which the gap keeps");
}
like($call_err,
    qr/WARNING:  the retention of public\.by_procedure keeps \d+ partitions? before a gap in its partitions\nDETAIL:  No partition holds the time from \Q$gap{by_procedure}\E\./,
    'with a warning that names the gap');
for my $table ('by_function', 'by_procedure') {
    is($node->safe_psql('postgres', "SELECT count(*) FROM $table WHERE body LIKE 'right clock %'"),
        '100', "$table: the 100 rows made at the right clock are still there");
    is(partitions_with_rows($table, q(body LIKE 'right clock %')), $holding{$table},
        "$table: in the partitions that held them");
}

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
    '200', 'and changes nothing');

# A clock outside the layout has no partition: 22003, as for an id, and nothing changes.
set_clock_offset($clock_file, '@2009-01-01 00:00:00');
$node->poll_query_until('postgres', q(SELECT now() < '2010-01-01'))
  or die 'the server does not see the clock in 2009';
like(error_of($node, q(SELECT * FROM snowflake_maintain_partitions('by_procedure'))),
    qr/ERROR:  22003: the clock reads -?\d+ Unix ms, outside the Snowflake timestamp range/,
    'a clock before the epoch is refused with 22003');
# A clock in the layout's last weeks: monthly partitions up to its end, none past it.
set_clock_offset($clock_file, '@2080-06-15 00:00:00');
$node->poll_query_until('postgres', q(SELECT now() > '2080-01-01'))
  or die 'the server does not see the clock in 2080';
$node->safe_psql('postgres', q(CREATE TABLE late (id bigint PRIMARY KEY) PARTITION BY RANGE (id)));
is($node->safe_psql('postgres', q(
SELECT count(*) FROM snowflake_partition_table('late', '1 month', 2, NULL, 'UTC', false)
WHERE action = 'created')),
    '2', 'in the layout\'s last month, partitions up to its end and none past it');

$node->stop;

# A second server, whose clock only moves forward: a step within the partitions made ahead, and
# maintenance stopped for longer than them. Each case has a database of its own, so that the
# procedure maintains its tables alone.
my $gap_clock_file = "$PostgreSQL::Test::Utils::tmp_check/clock_offset_033_gap";
set_clock_offset($gap_clock_file, '+0');
my $gap_node = snowflake_node('retention_gap', machine_id => 24);
start_with_clock($gap_node, $gap_clock_file);
$gap_node->safe_psql('postgres', "CREATE DATABASE $_") for 'within_ahead', 'stopped';

# Within ahead: hourly, 3 ahead, 3 hours kept. An old hour with a row, 2 hours back, and 100 rows
# at the right clock.
$gap_node->safe_psql('within_ahead', q(
CREATE EXTENSION snowflake;
CREATE TABLE steady (id bigint NOT NULL DEFAULT snowflake_nextval() PRIMARY KEY, body text)
    PARTITION BY RANGE (id);
CREATE TABLE steady_old PARTITION OF steady
    FOR VALUES FROM (snowflake_min_id(date_trunc('hour', now()) - interval '2 hours'))
    TO (snowflake_min_id(date_trunc('hour', now()) - interval '1 hour'));
INSERT INTO steady VALUES
    (snowflake_min_id(date_trunc('hour', now()) - interval '2 hours') + 1, 'old');
SELECT count(*) FROM snowflake_partition_table('steady', '1 hour', 3, retain => '3 hours',
                                               drop_expired => true);
INSERT INTO steady (body) SELECT 'right clock ' || i FROM generate_series(1, 100) AS i;
));

# Stopped: two tables, hourly, 2 ahead, 3 hours kept, 100 rows each at the right clock; nothing
# maintains them until the clock is 8 hours on.
for my $table ('stopped_fill', 'stopped_drop') {
    $gap_node->safe_psql('stopped', qq(
CREATE EXTENSION IF NOT EXISTS snowflake;
CREATE TABLE $table (id bigint NOT NULL DEFAULT snowflake_nextval() PRIMARY KEY, body text)
    PARTITION BY RANGE (id);
SELECT count(*) FROM snowflake_partition_table('$table', '1 hour', 2, retain => '3 hours',
                                               drop_expired => true);
INSERT INTO $table (body) SELECT 'right clock ' || i FROM generate_series(1, 100) AS i;
));
}

# The clock 2 hours on, within the 3 hours made ahead: no gap, and the retention works as
# before. The first run keeps the old hour for the newest key; once rows come at the new clock,
# the next run drops it.
set_clock_offset($gap_clock_file, '+7200');
$gap_node->poll_query_until('within_ahead', q(
SELECT now() > snowflake_timestamp((SELECT max(id) FROM steady)) + interval '110 minutes'))
  or die 'the server does not see the clock 2 hours on';
($ret, $out, $err) = $gap_node->psql('within_ahead', q(
SELECT coalesce(partition, '-') || ': ' || action FROM snowflake_maintain_partitions('steady')
ORDER BY 1));
like($out,
    qr/^public\.steady_old: kept \(older than the retention by the clock, not by the newest key\)$/m,
    'a step within ahead: the newest key keeps the old hour at first');
is(gap_of($gap_node, 'within_ahead', 'steady'), '', 'and the step left no gap');
$gap_node->safe_psql('within_ahead', q(
INSERT INTO steady (body) SELECT 'ahead ' || i FROM generate_series(1, 100) AS i));
($call_ret, $call_out, $call_err) =
  $gap_node->psql('within_ahead', 'CALL snowflake_run_partition_maintenance()');
like($call_err,
    qr/NOTICE:  public\.steady: detached and dropped \(older than the retention\) public\.steady_old$/m,
    'once rows come at the new clock, the retention drops the old hour, as before');
unlike($call_err, qr/gap|WARNING/, 'with no word of a gap');
is($gap_node->safe_psql('within_ahead', q(
SELECT count(*) FILTER (WHERE body = 'old') || ' ' || count(*) FILTER (WHERE body LIKE 'right clock %')
FROM steady)),
    '0 100', 'the old row went, the 100 rows of the last 3 hours stayed');

# Stopped: 8 hours on, past the 2 hours made ahead, inserts fail until maintenance runs.
set_clock_offset($gap_clock_file, '+28800');
$gap_node->poll_query_until('stopped', q(
SELECT now() > snowflake_timestamp((SELECT max(id) FROM stopped_fill)) + interval '470 minutes'))
  or die 'the server does not see the clock 8 hours on';
like(error_of($gap_node, q(INSERT INTO stopped_fill (body) VALUES ('lost')), 'stopped'),
    qr/ERROR:  23514: no partition of relation "stopped_fill" found for row/,
    'maintenance stopped past the partitions made ahead: inserts fail');
($call_ret, $call_out, $call_err) =
  $gap_node->psql('stopped', 'CALL snowflake_run_partition_maintenance()');
like($call_err, qr/NOTICE:  public\.stopped_fill: created /,
    'maintenance resumes: it creates the current hour and those ahead');
for my $table ('stopped_fill', 'stopped_drop') {
    $gap_node->safe_psql('stopped', qq(
INSERT INTO $table (body) SELECT 'resumed ' || i FROM generate_series(1, 100) AS i));
}
my %stopped_gap = map { $_ => gap_of($gap_node, 'stopped', $_) } 'stopped_fill', 'stopped_drop';
my %stopped_holding = map {
    $_ => $gap_node->safe_psql('stopped', qq(
SELECT string_agg(DISTINCT 'public.' || tableoid::regclass::text, ' ') FROM $_
WHERE body LIKE 'right clock %'))
} 'stopped_fill', 'stopped_drop';

# Rows at the new hour: the retention would drop the hours before the gap, as it did before
# 1.11. Now the gap keeps them, in the function and in the procedure.
($ret, $out, $err) = $gap_node->psql('stopped', q(
SELECT coalesce(partition, '-') || ': ' || action FROM snowflake_maintain_partitions('stopped_fill')
ORDER BY 1));
for my $partition (split / /, $stopped_holding{stopped_fill}) {
    like($out,
        qr/^\Q$partition\E: kept \(a gap in the partitions from \Q$stopped_gap{stopped_fill}\E lies between it and now\)$/m,
        "maintenance stopped: the gap keeps $partition");
}
like($err,
    qr/WARNING:  the retention of public\.stopped_fill keeps \d+ partitions? before a gap in its partitions\nDETAIL:  No partition holds the time from \Q$stopped_gap{stopped_fill}\E\./,
    'with a warning that names the gap');
($call_ret, $call_out, $call_err) =
  $gap_node->psql('stopped', 'CALL snowflake_run_partition_maintenance()');
for my $partition (split / /, $stopped_holding{stopped_drop}) {
    like($call_err,
        qr/NOTICE:  public\.stopped_drop: kept \(a gap in the partitions from \Q$stopped_gap{stopped_drop}\E lies between it and now\) \Q$partition\E$/m,
        "and in the procedure's notices, $partition");
}
like($call_err,
    qr/WARNING:  the retention of public\.stopped_drop keeps \d+ partitions? before a gap in its partitions/,
    'with the warning');
for my $table ('stopped_fill', 'stopped_drop') {
    is($gap_node->safe_psql('stopped',
            "SELECT count(*) FROM $table WHERE body LIKE 'right clock %'"),
        '100', "$table: the rows before the gap are kept");
}

# The clock is right: the hinted ways out. Setting the table up again creates the partitions of
# the gap, and its retention drops the hours before it at once.
($ret, $out, $err) = $gap_node->psql('stopped', q(
SELECT coalesce(partition, '-') || ': ' || action FROM snowflake_partition_table('stopped_fill',
    '1 hour', 2, retain => '3 hours', drop_expired => true) ORDER BY 1));
like($out, qr/: created$/m, 'set up again, the table gets the partitions of the gap');
for my $partition (split / /, $stopped_holding{stopped_fill}) {
    like($out, qr/^\Q$partition\E: detached and dropped \(older than the retention\)$/m,
        "and the retention drops $partition");
}
unlike($err, qr/WARNING/, 'with no warning');
is(gap_of($gap_node, 'stopped', 'stopped_fill'), '', 'no gap is left');
# Or the partitions before the gap are detached and dropped by hand.
my $before_gap = $gap_node->safe_psql('stopped', q(
WITH r AS (SELECT partition, starts, ends, lag(ends) OVER (ORDER BY starts) AS before_end
           FROM snowflake_partition_ranges('stopped_drop'))
SELECT string_agg(partition::text, ' ' ORDER BY starts) FROM r
WHERE ends <= (SELECT max(before_end) FROM r WHERE before_end < starts)));
like($before_gap, qr/^stopped_drop_p\S+( stopped_drop_p\S+)*$/, 'the partitions before the gap');
for my $partition (split / /, $before_gap) {
    $gap_node->safe_psql('stopped',
        "ALTER TABLE stopped_drop DETACH PARTITION $partition; DROP TABLE $partition");
}
is(gap_of($gap_node, 'stopped', 'stopped_drop'), '', 'dropped by hand, no gap is left either');
# Then maintenance goes on as before.
($call_ret, $call_out, $call_err) =
  $gap_node->psql('stopped', 'CALL snowflake_run_partition_maintenance()');
like($call_err,
    qr/NOTICE:  public\.stopped_fill: detached and dropped \(older than the retention\) /,
    'the next run drops the hours of the gap that are past the retention');
like($call_err, qr/NOTICE:  public\.stopped_drop: nothing to do/,
    'and has nothing to do for the other table');
unlike($call_err, qr/WARNING|gap/, 'with no warning');
is($gap_node->safe_psql('stopped', q(
SELECT (SELECT count(*) FROM stopped_fill) || ' ' || (SELECT count(*) FROM stopped_drop))),
    '100 100', 'the rows made since maintenance resumed are there');

# A table whose policies apply to its owner: the newest key cannot be read whole, so the
# retention is skipped with a warning, and its partitions are still made.
$gap_node->safe_psql('stopped', q(
CREATE ROLE keeper LOGIN;
GRANT CREATE ON SCHEMA public TO keeper;
SET ROLE keeper;
CREATE TABLE guarded (id bigint NOT NULL DEFAULT snowflake_nextval() PRIMARY KEY, body text)
    PARTITION BY RANGE (id);
SELECT count(*) FROM snowflake_partition_table('guarded', '1 hour', 2, '1 hour', 'UTC', true);
INSERT INTO guarded (body) SELECT 'right clock' FROM generate_series(1, 10);
ALTER TABLE guarded ENABLE ROW LEVEL SECURITY;
ALTER TABLE guarded FORCE ROW LEVEL SECURITY;
CREATE POLICY hide_some ON guarded USING (body <> 'right clock')));
set_clock_offset($gap_clock_file, '+39600');
$gap_node->poll_query_until('stopped', q(SELECT now() > pg_postmaster_start_time() + interval '2 hours'))
  or die 'the server does not see the clock 11 hours on';
my ($guard_ret, $guard_out, $guard_err) = $gap_node->psql('stopped',
    q(SET ROLE keeper; SELECT action FROM snowflake_maintain_partitions('guarded')));
is($guard_ret, 0, 'a table whose policies apply to its owner is still maintained');
like($guard_out, qr/created/, 'its partitions are made');
like($guard_out, qr/retention skipped \(row-level security applies to the table's owner\)/,
    'and the report says the retention was skipped');
like($guard_err, qr/WARNING:  the retention of public\.guarded is skipped: row-level security applies to its owner/,
    'with a warning that names the table');
is($gap_node->safe_psql('stopped', 'SELECT count(*) FROM guarded'), '10', 'no row went');

$gap_node->stop;
done_testing();
