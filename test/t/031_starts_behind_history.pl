# Every way a server starts behind its own history, each followed by every call a client can make
# first. The starts: a fast stop, a kill -9 of the postmaster, a failover to a streaming standby,
# and a restore of a base backup with its archived WAL. Each starts with its clock an hour behind
# the newest id. The calls: none, snowflake_nextval(), and, as a plain role,
# snowflake_settled_bound(), snowflake_settled_rows(), snowflake_settled_bound_lsn() and
# snowflake_info(). The mark must cover every id and every bound the server handed out
# (doc/design.md "The settled bound", doc/operations.md "Guarantees"). So the mark file never
# goes down, and a restart with the clock still behind refuses ids or issues them above every
# earlier id. A bound read then is at or above every earlier bound. With the clock right, ids are
# above every earlier id and bound, and the table's primary key refuses an id issued again. In
# 1.10 a bound read after such a start wrote the clock's reading into the mark file, and the next
# restart issued ids below earlier ones (CHANGELOG.md "1.11"). SNOWFLAKE_MATRIX=reduced keeps the plain bound
# read alone after each start (.ci/run runs it whole on 15 alone).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;

plan skip_all => 'libfaketime is not installed' unless have_libfaketime();
my $full = full_matrix('031');
my @paths = $full ? qw(nothing nextval bound rows bound_lsn info) : qw(bound);
my $tmp = $PostgreSQL::Test::Utils::tmp_check;
my $behind = 3600;

# The higher of two ids or bounds, compared as integers.
sub higher {
    my ($x, $y) = @_;
    return $x > $y ? $x : $y;
}

# Inserts ids for a cell; returns psql's status, the lowest id inserted and the error text.
sub insert_ids {
    my ($node, $cell, $count) = @_;
    return $node->psql('postgres', "\\set VERBOSITY verbose\n"
          . "WITH new AS (INSERT INTO issued SELECT snowflake_nextval(), '$cell' "
          . "FROM generate_series(1, $count) RETURNING id) SELECT min(id) FROM new");
}

# Runs SQL as the plain role reader; returns psql's status, output and error text.
sub as_reader {
    my ($node, $sql) = @_;
    return $node->psql('postgres', $sql, extra_params => [ '-U', 'reader' ]);
}

# A bound handed to a reader must be at or above every bound before it, and joins them.
sub reader_bound {
    my ($node, $cell, $what, $sql, $history) = @_;
    my ($ret, $bound, $err) = as_reader($node, $sql);
    if ($ret != 0) {
        fail("$cell: $what is read: $err");
        return;
    }
    cmp_ok($bound, '>=', $history->{bound}, "$cell: $what is at or above every bound read before");
    $history->{bound} = higher($history->{bound}, $bound);
}

# The calls a client can make first after the start, by path; each asserts what it returns.
my %paths = (
    nothing => sub { },
    nextval => sub {
        my ($node, $cell) = @_;
        my (undef, undef, $err) =
          $node->psql('postgres', "\\set VERBOSITY verbose\nSELECT snowflake_nextval()");
        like($err, qr/ERROR:  58000: clock moved backwards/,
            "$cell: the first snowflake_nextval() refuses with 58000");
    },
    bound => sub {
        my ($node, $cell, $history) = @_;
        reader_bound($node, $cell, 'the first snowflake_settled_bound()',
            'SELECT snowflake_settled_bound()', $history);
    },
    rows => sub {
        my ($node, $cell) = @_;
        my ($ret, undef, $err) =
          as_reader($node, 'SELECT count(*) FROM snowflake_settled_rows(NULL::issued, 0, 10)');
        is($ret, 0, "$cell: a plain role reads rows below the bound with snowflake_settled_rows()")
          or diag($err);
    },
    bound_lsn => sub {
        my ($node, $cell, $history) = @_;
        reader_bound($node, $cell, 'the bound of the first snowflake_settled_bound_lsn()',
            'SELECT bound FROM snowflake_settled_bound_lsn()', $history);
    },
    info => sub {
        my ($node, $cell, $history) = @_;
        reader_bound($node, $cell, 'the bound of the first snowflake_info()',
            'SELECT settled_bound FROM snowflake_info()', $history);
    },
);

# Ids and a bound at the right clock: the history that the next start is behind.
sub make_history {
    my ($node, $cell, $history) = @_;
    $node->safe_psql('postgres', "INSERT INTO issued SELECT snowflake_nextval(), '$cell history' "
          . 'FROM generate_series(1, 1000)');
    $history->{newest} = max_id($node, 'issued');
    $history->{bound} = higher($history->{bound},
        $node->safe_psql('postgres', 'SELECT snowflake_settled_bound()',
            extra_params => [ '-U', 'reader' ]));
}

# One cell after its start: the path, a restart with the clock still behind, then the clock right.
sub check_cell {
    my ($node, $cell, $clock, $path, $history, $mark_before) = @_;
    $paths{$path}->($node, $cell, $history);
    my $mark_after_path = mark_on_disk($node);
    cmp_ok($mark_after_path, '>=', $mark_before,
        "$cell: the mark file after the path is at or above its mark before the start");

    $node->stop;
    start_with_clock($node, $clock);
    my $mark_restarted = mark_on_disk($node);
    cmp_ok($mark_restarted, '>=', $mark_after_path,
        "$cell: the mark file after a restart is at or above its mark after the path");
    cmp_ok($mark_restarted, '>=',
        higher(unix_ms_of($history->{newest}), unix_ms_of($history->{bound} - 1)),
        "$cell: the mark file after a restart covers the newest id and every bound read");

    my $earlier = max_id($node, 'issued');
    my ($ret, $lowest, $err) = insert_ids($node, "$cell behind", 10);
    ok($ret == 0 ? $lowest > $earlier : $err =~ /ERROR:  58000: clock moved backwards/,
        "$cell: with the clock still behind, ids are refused (58000) or above every earlier id")
      or diag($ret == 0 ? "lowest id $lowest, newest earlier id $earlier" : $err);
    reader_bound($node, $cell, 'a bound read with the clock still behind',
        'SELECT snowflake_settled_bound()', $history);

    set_clock_offset($clock, '+0');
    $earlier = max_id($node, 'issued');
    ($ret, $lowest, $err) = insert_ids($node, "$cell right", 100);
    is($ret, 0, "$cell: with the clock right, 100 ids are issued and none of them again")
      or diag($err);
    ok($ret == 0 && $lowest > $earlier && $lowest >= $history->{bound},
        "$cell: with the clock right, every id is above every earlier id and every bound read")
      or diag("lowest id $lowest, newest earlier id $earlier, highest bound $history->{bound}");
}

# The origin: a primary that archives, with fsync on since durability is what is tested.
my $origin = snowflake_node('origin', datacenter_id => 4, machine_id => 2, allows_streaming => 1,
    has_archiving => 1);
$origin->append_conf('postgresql.conf', "fsync = on\n");
my $origin_clock = "$tmp/clock_031_origin";
start_with_clock($origin, $origin_clock);
$origin->safe_psql('postgres', q(CREATE EXTENSION snowflake;
CREATE ROLE reader LOGIN;
CREATE TABLE issued (id bigint PRIMARY KEY, cell text NOT NULL);
GRANT SELECT ON issued TO reader));
my %history = (bound => 0);

# A fast stop and a kill -9 of the postmaster, each followed by a start an hour behind; one
# server for all of them, each cell beginning with a history of its own at the right clock.
for my $start ('restart', 'crash') {
    for my $path (@paths) {
        my $cell = "${start}_$path";
        make_history($origin, $cell, \%history);
        if ($start eq 'restart') {
            $origin->stop;
        } else {
            kill9_and_wait($origin);
        }
        my $mark_before = mark_on_disk($origin);
        set_clock_offset($origin_clock, offset_behind($history{newest}, $behind));
        start_with_clock($origin, $origin_clock);
        check_cell($origin, $cell, $origin_clock, $path, \%history, $mark_before);
    }
}

# A copy of the origin's base backup that archives nothing, so the restores see the origin's alone.
sub node_from_base {
    my ($name, %params) = @_;
    my $node = PostgreSQL::Test::Cluster->new($name);
    $node->init_from_backup($origin, 'base', %params);
    $node->append_conf('postgresql.conf', "archive_mode = off\n");
    return $node;
}

# One standby per failover cell, each with its own clock an hour behind the origin's, and one
# history after the base backup that WAL alone brings them.
$origin->backup('base');
my %standbys;
for my $path (@paths) {
    my $standby = node_from_base("failover_$path", has_streaming => 1);
    set_clock_offset("$tmp/clock_031_failover_$path", "-$behind");
    start_with_clock($standby, "$tmp/clock_031_failover_$path");
    $standbys{$path} = $standby;
}
make_history($origin, 'failover and restore', \%history);
archive_current_wal($origin);
$origin->wait_for_catchup($_) for values %standbys;
$origin->stop;

for my $path (@paths) {
    my $cell = "failover_$path";
    my $standby = $standbys{$path};
    my $mark_before = mark_on_disk($standby);
    $standby->promote;
    check_cell($standby, $cell, "$tmp/clock_031_$cell", $path, {%history}, $mark_before);
    $standby->stop;
    $standby->clean_node;
}

# A restore of the base backup that replays the archive to its end, then promotes, started an
# hour behind the newest id.
for my $path (@paths) {
    my $cell = "restore_$path";
    my $copy = node_from_base($cell, has_restoring => 1, standby => 0);
    my $mark_before = mark_on_disk($copy);
    set_clock_offset("$tmp/clock_031_$cell", offset_behind($history{newest}, $behind));
    start_with_clock($copy, "$tmp/clock_031_$cell");
    $copy->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()')
      or die "$cell: the restore did not end";
    is(max_id($copy, 'issued'), $history{newest},
        "$cell: the restore replayed every id of the origin");
    check_cell($copy, $cell, "$tmp/clock_031_$cell", $path, {%history}, $mark_before);
    $copy->stop;
    $copy->clean_node;
}

done_testing();
