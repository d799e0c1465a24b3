# Every server that replays this extension's WAL must preload its library: a streaming standby, a
# point-in-time restore and crash recovery each stop at the first mark record without it, with
# PostgreSQL's own message naming the resource manager and the setting, and each recovers once the
# library is back, its mark covering every id its WAL carried.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use SnowflakeTest;

my $primary = snowflake_node('primary', allows_streaming => 1, has_archiving => 1,
    datacenter_id => 9, machine_id => 1);
$primary->append_conf('postgresql.conf', "fsync = on\n");
$primary->start;
$primary->safe_psql('postgres', q(
CREATE EXTENSION snowflake;
CREATE TABLE issued (id bigint PRIMARY KEY);
));
$primary->backup('base');

# Ids made after the base backup: only the WAL that follows it carries their marks.
$primary->safe_psql('postgres',
    'INSERT INTO issued SELECT snowflake_nextval() FROM generate_series(1, 200000)');
my $max = max_id($primary, 'issued');
is( $primary->safe_psql('postgres',
        "SELECT rm_id || ' ' || rm_name FROM pg_get_wal_resource_managers() WHERE NOT rm_builtin"),
    '128 snowflake', 'the resource manager is registered as id 128');
archive_current_wal($primary);

# Starts a server without the library and waits for its recovery to stop at a mark record and
# the server to exit, then puts the library back for the next start. pg_ctl is not asked to wait
# for the start, nor the node told it runs: whether the server says it started before its startup
# process fails depends on the version (19 says so for a point-in-time restore), and a node that
# PostgreSQL::Test::Cluster thinks started must still have its postmaster.pid when it looks.
sub stops_without_library {
    my ($node, $what) = @_;
    # The log exists before the server writes it, for wait_for_log to read from the start.
    append_to_file($node->logfile, '');
    my $offset = -s $node->logfile;
    $node->append_conf('postgresql.conf', "shared_preload_libraries = ''\n");
    system_or_bail('pg_ctl', '-W', '-D', $node->data_dir, '-l', $node->logfile, '-o',
        '--cluster-name=' . $node->name, 'start');
    $node->wait_for_log(qr/resource manager with ID 128 not registered/, $offset);
    my $pid_file = $node->data_dir . '/postmaster.pid';
    for (1 .. 10 * $PostgreSQL::Test::Utils::timeout_default) {
        last unless -e $pid_file;
        usleep(100_000);
    }
    BAIL_OUT("$what without the library: the server is still running") if -e $pid_file;
    my $log = slurp_file($node->logfile, $offset);
    like($log, qr/FATAL:  resource manager with ID 128 not registered/,
        "$what without the library: recovery stops at the first mark record");
    # PostgreSQL 18 quotes the setting's name.
    like($log,
        qr/HINT:  Include the extension module that implements this resource manager in "?shared_preload_libraries"?\./,
        "$what without the library: the hint names the setting");
    $node->append_conf('postgresql.conf', "shared_preload_libraries = 'snowflake'\n");
}

# The mark a server restored or replayed covers every id of the primary's WAL.
sub mark_covers_primary {
    my ($node, $what) = @_;
    is( $node->safe_psql('postgres',
            "SELECT persisted_mark >= snowflake_timestamp($max) FROM snowflake_info()"),
        't', "$what with the library: its mark covers every id the primary issued");
}

# A streaming standby.
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'base', has_streaming => 1);
stops_without_library($standby, 'a standby');
$standby->start;
$primary->wait_for_catchup($standby);
mark_covers_primary($standby, 'a standby');
$standby->stop;

# A point-in-time restore from the base backup and the archive, which then takes writes.
my $restored = PostgreSQL::Test::Cluster->new('restored');
$restored->init_from_backup($primary, 'base', has_restoring => 1, standby => 0);
stops_without_library($restored, 'a point-in-time restore');
$restored->start;
$restored->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()')
  or die 'the restore did not finish';
mark_covers_primary($restored, 'a point-in-time restore');
cmp_ok($restored->safe_psql('postgres', 'SELECT snowflake_nextval()'),
    '>', $max, 'the restored server issues ids above every id of the primary');
$restored->stop;

# Crash recovery of the primary itself.
kill9_and_wait($primary);
stops_without_library($primary, 'crash recovery');
$primary->start;
mark_covers_primary($primary, 'crash recovery');
cmp_ok($primary->safe_psql('postgres', 'SELECT snowflake_nextval()'),
    '>', $max, 'after crash recovery the primary issues ids above every id before the crash');
$primary->stop;

done_testing();
