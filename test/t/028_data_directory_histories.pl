# Every way a data directory comes to be, each started with its mark file present (its own
# history's), missing, and foreign (another cluster's, an hour behind), and with the clock 5 s and
# 2 min behind the newest id stored in it: every id issued is above the newest stored id, none of
# them a stored id (the table's primary key would refuse it), or generation is refused with
# 55000 or 58000, naming the cause
# (doc/operations.md "Guarantees"). The ways: initdb and a restore of a dump; pg_upgrade into a
# cluster never started, into one started once before with the clock behind that issued an id,
# and into one that issued none, the mark carried or not; pg_basebackup; a point-in-time restore
# to a restore point; a promoted standby; pg_rewind of the old primary; a logical-replication
# subscriber with the same node pair that takes over. SNOWFLAKE_MATRIX=reduced keeps the
# pg_upgrade ways and the clock 2 min behind; .ci/run runs it whole on 17 alone
# (SNOWFLAKE_MATRIX_FULL=028, full_matrix() in test/perl/SnowflakeTest.pm).
use strict;
use warnings;
use File::Copy ();
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;

plan skip_all => 'libfaketime is not installed' unless have_libfaketime();
my $full = full_matrix('028');
my @clocks_behind = $full ? (5, 120) : (120);
my $tmp = $PostgreSQL::Test::Utils::tmp_check;

# Every node has the origin's node pair: each is a history of the same server's ids. Those made
# from a backup or a copy take the origin's settings with its files.
sub node_of_pair {
    my ($name, %options) = @_;
    my $node = snowflake_node($name, datacenter_id => 7, machine_id => 1, %options);
    $node->append_conf('postgresql.conf', "fsync = on\n");
    return $node;
}

# Ids into the origin's table, returning the highest.
sub insert_ids {
    my ($node, $way, $count) = @_;
    return $node->safe_psql('postgres', qq(
INSERT INTO events (way) SELECT '$way' FROM generate_series(1, $count);
SELECT max(id) FROM events));
}

# A node made from a backup of another; it archives nothing, so that the origin's archive keeps
# only the origin's history for the point-in-time restores.
sub node_from_backup {
    my ($name, $source, $backup, %params) = @_;
    my $node = PostgreSQL::Test::Cluster->new($name);
    $node->init_from_backup($source, $backup, %params);
    $node->append_conf('postgresql.conf', "archive_mode = off\n");
    return $node;
}

# A stopped node's data directory copied into a new node, for one start of the matrix.
sub copy_of {
    my ($source, $name) = @_;
    $source->backup_fs_cold($name);
    return node_from_backup($name, $source, $name);
}

# Inserts ids with the clock $behind seconds behind: issued, or refused naming the cause. Returns
# whether they were issued.
sub insert_behind {
    my ($node, $cell, $behind, $when) = @_;
    my ($ret, $out, $err) = $node->psql('postgres',
        "\\set VERBOSITY verbose\nINSERT INTO events (way) SELECT '$cell' FROM generate_series(1, 2000)");
    if ($ret == 0) {
        pass("$cell: with the clock $behind s behind$when, ids are issued");
        return 1;
    }
    like($err, qr/ERROR:  (55000: a stored key|58000: clock moved backwards)/,
        "$cell: with the clock $behind s behind$when, generation is refused, naming the cause");
    return 0;
}

# Starts a data directory that has just come to be, its mark file as $mark says, with its clock
# $behind seconds behind the newest id stored in it; inserts ids with that clock, then with the
# clock right. Either insert would fail on an id issued again; the first may instead be refused,
# naming the cause.
sub check_start {
    my ($node, $cell, $mark, $behind) = @_;
    my $mark_file = $node->data_dir . '/snowflake_mark';
    if ($mark eq 'missing') {
        unlink $mark_file;
    } elsif ($mark eq 'foreign') {
        unlink $mark_file;
        append_to_file($mark_file, mark_file_text(time() * 1000 - 3600000, '1234567890123456789', 7, 1));
    }
    my $clock = "$tmp/clock_$cell";
    set_clock_offset($clock, '+0');
    start_with_clock($node, $clock);
    $node->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()')
      or die "$cell: recovery did not end";
    my $stored = $node->safe_psql('postgres', 'SELECT max(id) FROM events');
    set_clock_offset($clock, offset_behind($stored, $behind));
    my $refused = !insert_behind($node, $cell, $behind, '');
    # A crash of the whole server (kill -9 of the postmaster, as a power loss) while a stored key
    # holds generation back forgets nothing: the keys are read again unless a mark covers them.
    if ($refused) {
        kill9_and_wait($node);
        set_clock_offset($clock, offset_behind($stored, $behind));
        start_with_clock($node, $clock);
        insert_behind($node, $cell, $behind, ' after a crash');
    }
    set_clock_offset($clock, '+0');
    $node->safe_psql('postgres',
        "INSERT INTO events (way) SELECT '$cell' FROM generate_series(1, 2000)");
    # Above the newest stored id, not merely none of the stored ids: the stored ids of a short
    # test span a few seconds, which a clock behind them could miss by chance.
    is($node->safe_psql('postgres', "SELECT count(*) FROM events WHERE way = '$cell' AND id <= $stored"),
        '0', "$cell: every id issued is above the newest stored id");
    $node->stop;
    $node->clean_node;
}

# Each start of a way's data directory: a copy of it per mark file and clock. The marks are
# 'present' (as the way left it), 'missing', 'foreign' and, for pg_upgrade, 'carried' (the
# origin's, as the upgrade steps say); $prepare runs on each copy first.
sub check_way {
    my ($source, $way, $marks, $prepare) = @_;
    for my $mark (@$marks) {
        for my $behind (@clocks_behind) {
            my $node = copy_of($source, "${way}_${mark}_$behind");
            $prepare->($node, $mark) if $prepare;
            check_start($node, "${way}_${mark}_$behind", $mark, $behind);
        }
    }
}
my @marks = ('present', 'missing', 'foreign');

# The origin: sets of ids before a base backup, before a restore point and after it, with the
# archive for the point-in-time restore, a standby and a subscriber of its table.
my $origin = node_of_pair('origin', allows_streaming => 'logical', has_archiving => 1);
$origin->append_conf('postgresql.conf', "wal_log_hints = on\n");
$origin->start;
$origin->safe_psql('postgres', q(CREATE EXTENSION snowflake;
CREATE TABLE events (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), way text NOT NULL);
CREATE PUBLICATION events FOR TABLE events));
insert_ids($origin, 'origin', 20000);
$origin->backup('base');
insert_ids($origin, 'origin', 20000);
$origin->safe_psql('postgres', "SELECT pg_create_restore_point('point')");
insert_ids($origin, 'origin', 20000);
archive_current_wal($origin);
$origin->command_ok([ 'pg_dump', '-Fc', '-f', "$tmp/origin.dump", '-d', $origin->connstr('postgres') ],
    'the origin is dumped');

my ($standby, $subscriber);
if ($full) {
    $standby = node_from_backup('standby', $origin, 'base', has_streaming => 1);
    $standby->start;
    $origin->wait_for_catchup($standby);
    # The subscriber has the origin's pair and never issues an id until it takes over.
    $subscriber = node_of_pair('subscriber');
    $subscriber->start;
    $subscriber->safe_psql('postgres', q(CREATE EXTENSION snowflake;
CREATE TABLE events (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), way text NOT NULL)));
    my $connection = 'host=' . $origin->host . ' port=' . $origin->port . ' dbname=postgres';
    $subscriber->safe_psql('postgres',
        "CREATE SUBSCRIPTION events CONNECTION '$connection' PUBLICATION events");
    $subscriber->wait_for_subscription_sync($origin, 'events');
    # Disabled at once: pg_upgrade of the origin refuses a slot a subscriber keeps active.
    $subscriber->safe_psql('postgres', 'ALTER SUBSCRIPTION events DISABLE');
}
$origin->stop;

# pg_upgrade into a new cluster never started, or started once before with the clock behind: one
# that issued an id, whose mark the new cluster keeps as 'present', and one that issued none.
for my $before ($full ? ('never', 'issued', 'idle') : ('issued', 'idle')) {
    # The origin holds the subscriber's logical slot, which pg_upgrade carries from 17 on: the new
    # cluster must then take it.
    my $new = node_of_pair("upgraded_$before", allows_streaming => 'logical');
    if ($before ne 'never') {
        my $clock = "$tmp/clock_before_$before";
        set_clock_offset($clock, '-300');
        start_with_clock($new, $clock);
        $new->safe_psql('postgres',
            $before eq 'issued' ? 'CREATE EXTENSION snowflake; SELECT snowflake_nextval()' : 'SELECT 1');
        $new->safe_psql('postgres', 'DROP EXTENSION IF EXISTS snowflake');
        $new->stop;
    }
    chdir $tmp;
    command_ok(
        [
            'pg_upgrade', '-d', $origin->data_dir, '-D', $new->data_dir,
            '-b', $origin->config_data('--bindir'), '-B', $new->config_data('--bindir'),
            '-s', $new->host, '-p', $origin->port, '-P', $new->port
        ],
        "pg_upgrade into a cluster started before: $before");
    my @upgrade_marks = $full ? ('carried', 'missing', 'foreign') : ('missing');
    unshift @upgrade_marks, 'present' if $before eq 'issued';
    check_way($new, "upgrade_$before", \@upgrade_marks, sub {
        my ($node, $mark) = @_;
        return unless $mark eq 'carried';
        File::Copy::copy($origin->data_dir . '/snowflake_mark', $node->data_dir . '/snowflake_mark')
          or die "copy snowflake_mark: $!";
        chmod 0600, $node->data_dir . '/snowflake_mark';
    });
}

if ($full) {
    # initdb, and the origin's dump restored before the first id; 'present' is the mark of an id
    # issued after the restore.
    my $restored = node_of_pair('restored');
    $restored->start;
    $restored->command_ok([ 'pg_restore', '-d', $restored->connstr('postgres'), "$tmp/origin.dump" ],
        'the dump restores into a new cluster');
    $restored->stop;
    check_way($restored, 'restored', \@marks, sub {
        my ($node, $mark) = @_;
        return unless $mark eq 'present';
        $node->start;
        $node->safe_psql('postgres', 'SELECT snowflake_nextval()');
        $node->stop;
    });

    # A base backup started on its own, and a point-in-time restore to the restore point.
    my $copy = node_from_backup('base_copy', $origin, 'base');
    check_way($copy, 'basebackup', \@marks);
    for my $mark (@marks) {
        for my $behind (@clocks_behind) {
            my $cell = "pitr_${mark}_$behind";
            my $node = node_from_backup($cell, $origin, 'base', has_restoring => 1, standby => 0);
            $node->append_conf('postgresql.conf',
                "recovery_target_name = 'point'\nrecovery_target_action = 'promote'\n");
            check_start($node, $cell, $mark, $behind);
        }
    }

    # The promoted standby, which then issues ids of its own; the old primary, which issued ids
    # after the standby was promoted, rewound from it.
    $standby->promote;
    insert_ids($standby, 'promoted', 5000);
    $origin->start;
    insert_ids($origin, 'diverged', 5000);
    $origin->stop;
    $standby->stop;
    check_way($standby, 'promoted', \@marks);
    command_ok([ 'pg_rewind', '--target-pgdata', $origin->data_dir,
            '--source-pgdata', $standby->data_dir ], 'the old primary is rewound');
    check_way($origin, 'rewound', \@marks);

    # The subscriber takes over the origin's pair, which it had all along.
    $subscriber->stop;
    check_way($subscriber, 'subscriber', \@marks, sub {
        my ($node, $mark) = @_;
        return unless $mark eq 'present';
        $node->start;
        $node->safe_psql('postgres', 'SELECT snowflake_nextval()');
        $node->stop;
    });
}

done_testing();
