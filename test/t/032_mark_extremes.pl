# The durable mark at the edges of what it covers (doc/operations.md "Guarantees", "The mark
# file"). A bound read with the clock past the layout's end (2080) must not end generation. The
# mark file must then stay short of the layout's end, and the bound must not turn negative. A
# bound read with the clock before the epoch (2010) must leave the mark file as it was. After a
# start without the mark file, a stored key ahead of the clock raises the generator. A reader may
# then be handed a bound above the key. Every id after a restart must still be at or above that
# bound, even once the key's row is deleted. A key beyond snowflake.key_floor_max_lead stops
# generation until the clock passes it or a superuser releases it. A call with the clock past
# 2080 fails with 22003 and must leave that stop in place. A standby with no node pair set may
# replay a mark record of a primary still on 1.9, which holds the mark alone. It must keep that
# mark in its own mark file, so that after a restart and a promotion no id is at or below it.
# Each of these was broken in 1.10 (CHANGELOG.md "1.11"). The checks before 2010 follow those past 2080 on
# the same server, so a failure past 2080 can fail them too.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;

plan skip_all => 'libfaketime is not installed' unless have_libfaketime();

# The mark_unix_ms of the layout's last millisecond (2080-07-10 17:30:30.208 UTC).
my $layout_end = 3487858230208;
my $clock = "$PostgreSQL::Test::Utils::tmp_check/clock_offset_032";
my $node = snowflake_node('extremes', datacenter_id => 2, machine_id => 9);
$node->append_conf('postgresql.conf', "fsync = on\nsnowflake.key_floor_max_lead = '1h'\n");
start_with_clock($node, $clock);
$node->safe_psql('postgres', q(CREATE EXTENSION snowflake;
CREATE ROLE reader LOGIN;
CREATE TABLE issued (id bigint PRIMARY KEY);
CREATE TABLE keys (id bigint PRIMARY KEY)));

# The highest bound a reader was handed so far; every later id must be at or above it.
my $highest_bound = 0;

# A bound handed to a reader must be at or above every bound before it, and joins them.
sub check_reader_bound {
    my ($sql, $name) = @_;
    my ($ret, $bound, $err) = $node->psql('postgres', $sql, extra_params => [ '-U', 'reader' ]);
    ok($ret == 0 && $bound >= $highest_bound, $name)
      or diag($ret == 0 ? "bound $bound, highest before $highest_bound" : $err);
    $highest_bound = $bound if $ret == 0 && $bound > $highest_bound;
}

# Draws ids into issued; returns psql's status, the lowest id drawn and the error text.
sub insert_ids {
    my ($count) = @_;
    return $node->psql('postgres', "\\set VERBOSITY verbose\n"
          . "WITH new AS (INSERT INTO issued SELECT snowflake_nextval() "
          . "FROM generate_series(1, $count) RETURNING id) SELECT min(id) FROM new");
}

# After a clock at an edge, ids must come at once, above every id and bound before them.
sub check_issues_at_once {
    my ($name) = @_;
    my $earlier = max_id($node, 'issued');
    my ($ret, $lowest, $err) = insert_ids(100);
    ok($ret == 0 && $lowest > $earlier && $lowest >= $highest_bound, $name)
      or diag($ret == 0 ? "lowest $lowest, earlier $earlier, bound $highest_bound" : $err);
}

# Stores a key of the server's pair ahead of the clock, then starts without the mark file.
sub start_without_mark_with_key_ahead {
    my ($ahead) = @_;
    my $key = $node->safe_psql('postgres',
        "INSERT INTO keys SELECT snowflake_encode(clock_timestamp() + interval '$ahead', 2, 9, 0) "
          . 'RETURNING id');
    $node->stop;
    unlink($node->data_dir . '/snowflake_mark') or die "unlink snowflake_mark: $!";
    start_with_clock($node, $clock);
    return $key;
}

# A clock past the layout's end.
$node->safe_psql('postgres',
    'INSERT INTO issued SELECT snowflake_nextval() FROM generate_series(1, 1000)');
check_reader_bound('SELECT snowflake_settled_bound()', 'a bound is read at the right clock');
set_clock_offset($clock, '@2081-01-01 00:00:00');
check_reader_bound('SELECT snowflake_settled_bound()',
    'with the clock past 2080, the bound is not negative and at or above every bound before');
check_reader_bound('SELECT settled_bound FROM snowflake_info()',
    'with the clock past 2080, snowflake_info() shows a bound at or above every bound before');
cmp_ok(mark_on_disk($node), '<', $layout_end,
    "with the clock past 2080, a bound read leaves the mark file short of the layout's end");
set_clock_offset($clock, '+0');
check_issues_at_once('back at the right clock, ids are issued at once');
$node->stop;
start_with_clock($node, $clock);
check_issues_at_once('after a restart at the right clock, ids are issued at once');

# A clock before the epoch.
my $mark_before = mark_on_disk($node);
set_clock_offset($clock, '@2009-01-01 00:00:00');
check_reader_bound('SELECT snowflake_settled_bound()',
    'with the clock before 2010, the bound is at or above every bound before');
is(mark_on_disk($node), $mark_before,
    'with the clock before 2010, a bound read leaves the mark file as it was');
like(error_of($node, 'SELECT snowflake_nextval()'),
    qr/ERROR:  22003: the clock reads -?\d+ Unix ms, outside the Snowflake timestamp range/,
    'with the clock before 2010, snowflake_nextval() fails with 22003');
set_clock_offset($clock, '+0');
$node->stop;
start_with_clock($node, $clock);
check_issues_at_once('after a bound read before 2010 and a restart, ids are issued at once');

# A key ten minutes ahead, within snowflake.key_floor_max_lead, after a start without the mark
# file; the bound read then may be anything, but no later id may be below it.
my $key = start_without_mark_with_key_ahead('10 min');
my $refusal = error_of($node, 'SELECT snowflake_nextval()');
like($refusal, qr/ERROR:  55000: a stored key holds Snowflake id generation back/,
    'a key ten minutes ahead holds generation back (55000)');
like($refusal, qr/key $key of/, 'the refusal names the stored key');
my ($ret, $bound, $bound_err) = $node->psql('postgres', 'SELECT snowflake_settled_bound()',
    extra_params => [ '-U', 'reader' ]);
is($ret, 0, 'a plain role reads the bound while the key holds generation back')
  or diag($bound_err);
$highest_bound = $bound if $bound > $highest_bound;
$node->safe_psql('postgres', "DELETE FROM keys WHERE id = $key");
$node->stop;
start_with_clock($node, $clock);
my ($status, $lowest, $err) = insert_ids(100);
ok($status == 0 ? $lowest >= $highest_bound : $err =~ /ERROR:  5[58]000: /,
    'after the key is deleted and a restart, ids are refused or at or above every bound read')
  or diag($status == 0 ? "lowest $lowest, bound read $highest_bound" : $err);

# A key two hours ahead, beyond snowflake.key_floor_max_lead, and one call past 2080.
$key = start_without_mark_with_key_ahead('2 hours');
like(error_of($node, 'SELECT snowflake_nextval()'),
    qr/ERROR:  55000: a stored key \d+ ms ahead of the clock stops Snowflake id generation/,
    'a key two hours ahead stops generation (55000)');
set_clock_offset($clock, '@2081-01-01 00:00:00');
like(error_of($node, 'SELECT snowflake_nextval()'), qr/ERROR:  22003: /,
    'with the clock past 2080, snowflake_nextval() fails with 22003');
set_clock_offset($clock, '+0');
$refusal = error_of($node, 'SELECT snowflake_nextval()');
like($refusal,
    qr/ERROR:  55000: a stored key \d+ ms ahead of the clock stops Snowflake id generation/,
    'back at the right clock, the key still stops generation (55000, not 58000)');
like($refusal, qr/key $key of/, 'the refusal still names the key');
($ret, undef, $err) = $node->psql('postgres', "SELECT snowflake_release_key($key)");
is($ret, 0, 'a superuser releases the key that stops generation') or diag($err);
$node->stop;

# A standby with no node pair set replays a mark record as a primary on 1.9 wrote it, ten
# minutes ahead of the primary's clock (its ids reached it), after the base backup.
my $primary = snowflake_node('old_primary', datacenter_id => 3, machine_id => 4,
    allows_streaming => 1);
$primary->append_conf('postgresql.conf', "fsync = on\n");
$primary->start;
$primary->safe_psql('postgres', q(CREATE EXTENSION snowflake;
CREATE TABLE issued (id bigint PRIMARY KEY);
INSERT INTO issued SELECT snowflake_nextval() FROM generate_series(1, 1000)));
create_old_mark_function($primary);
$primary->backup('base');
my $standby = PostgreSQL::Test::Cluster->new('standby_without_pair');
$standby->init_from_backup($primary, 'base', has_streaming => 1);
$standby->append_conf('postgresql.conf',
    "snowflake.datacenter_id = -1\nsnowflake.machine_id = -1\n");
$standby->start;
# 1.10 logged a mark before the epoch when a bound was read at such a clock: replay passes it over
# rather than stop.
my $log_offset = -s $standby->logfile;
$primary->safe_psql('postgres', 'SELECT snowflake_test_old_mark(1000)');
$primary->wait_for_catchup($standby);
ok($standby->log_contains(qr/passed over a mark record of 1000 Unix ms, before the Snowflake epoch/,
        $log_offset),
    'a mark record before the epoch is passed over, and replay goes on');
my $emitted = $primary->safe_psql('postgres',
    "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint + 600000");
$primary->safe_psql('postgres', "SELECT snowflake_test_old_mark($emitted)");
# A checkpoint after the record lets the standby's restart begin replay past it.
$primary->safe_psql('postgres', 'CHECKPOINT');
$primary->wait_for_catchup($standby);
ok(-e $standby->data_dir . '/snowflake_mark', 'the standby has a mark file after the replay');
cmp_ok(mark_on_disk($standby), '>=', $emitted,
    "the standby's mark file covers the old primary's mark");

$primary->stop;
$standby->stop;
$standby->start;
$standby->promote;
set_and_reload($standby, 'snowflake.datacenter_id', '3');
set_and_reload($standby, 'snowflake.machine_id', '4');
($ret, my $id, $err) =
  $standby->psql('postgres', "\\set VERBOSITY verbose\nSELECT snowflake_nextval()");
ok($ret == 0 ? unix_ms_of($id) > $emitted : $err =~ /ERROR:  5[58]000: /,
    "after a restart, a promotion and the old primary's pair set, ids are refused or above its mark")
  or diag($ret == 0 ? 'id of ' . unix_ms_of($id) . " Unix ms, mark $emitted" : $err);
$standby->stop;

done_testing();
