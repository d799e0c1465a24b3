# What snowflake_nextval() says when the server is not ready for it: not preloaded, node ids
# unset, a standby in recovery. And that the node ids are applied by a reload.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use SnowflakeTest;

# Without shared_preload_libraries: the pure functions work, generation explains what to do.
my $plain = PostgreSQL::Test::Cluster->new('not_preloaded');
$plain->init;
$plain->start;
$plain->safe_psql('postgres', 'CREATE EXTENSION snowflake');
is($plain->safe_psql('postgres', 'SELECT snowflake_encode(1700000000000, 7, 13, 4095)'),
    '1724551110457221119', 'encoding works without preloading');
is($plain->safe_psql('postgres', 'SELECT snowflake_machine_id(1724551110457221119)'),
    '13', 'decoding works without preloading');
my $error = error_of($plain, 'SELECT snowflake_nextval()');
like($error, qr/ERROR:  55000: snowflake must be loaded via shared_preload_libraries/,
    'nextval without preloading: 55000');
like($error, qr/HINT:  Add shared_preload_libraries = 'snowflake' to postgresql.conf/,
    'the hint shows the line to add');
$plain->safe_psql('postgres', 'CREATE TABLE legacy (id serial PRIMARY KEY)');
$error = error_of($plain, "SELECT * FROM snowflake_convert_column('legacy', 'id')");
like($error, qr/ERROR:  55000: snowflake must be loaded via shared_preload_libraries/,
    'the conversion without preloading: 55000');
is($plain->safe_psql('postgres', "SELECT pg_get_serial_sequence('legacy', 'id') IS NOT NULL"),
    't', 'and the column is left as it was');
is( $plain->safe_psql(
        'postgres',
        q(SELECT concat_ws(',', datacenter_id IS NULL, machine_id IS NULL, epoch,
                 last_timestamp IS NULL, ids_generated, sequence_waits, clock_rollbacks)
          FROM snowflake_info())),
    't,t,2010-11-04 01:42:54.657+00,t,0,0,0',
    'snowflake_info works without preloading and shows an empty state');
$plain->stop;

# Preloaded, node ids not set yet.
my $primary = PostgreSQL::Test::Cluster->new('primary');
$primary->init(allows_streaming => 1);
$primary->append_conf('postgresql.conf', "shared_preload_libraries = 'snowflake'\n");
$primary->start;
$primary->safe_psql('postgres', 'CREATE EXTENSION snowflake');
$error = error_of($primary, 'SELECT snowflake_nextval()');
like($error, qr/ERROR:  55000: snowflake.datacenter_id is not set/, 'unset datacenter id: 55000');
like($error, qr/HINT:  Set snowflake.datacenter_id to a value from 0 to 31/, 'with a hint');

set_and_reload($primary, 'snowflake.datacenter_id', '4');
$error = error_of($primary, 'SELECT snowflake_nextval()');
like($error, qr/ERROR:  55000: snowflake.machine_id is not set/, 'unset machine id: 55000');

# A value out of range is refused by the GUC machinery, with the range in the message.
$error = error_of($primary, 'ALTER SYSTEM SET snowflake.machine_id = 32');
like($error, qr/32 is outside the valid range for parameter "snowflake.machine_id" \(-1 \.\. 31\)/,
    'out-of-range machine id refused with its range');
$error = error_of($primary, 'ALTER SYSTEM SET snowflake.datacenter_id = -2');
like($error, qr/-2 is outside the valid range for parameter "snowflake.datacenter_id" \(-1 \.\. 31\)/,
    'out-of-range datacenter id refused with its range');
# PostgreSQL 18 writes the unit into the range too: "(0 ms .. 60000 ms)".
$error = error_of($primary, 'ALTER SYSTEM SET snowflake.max_clock_rollback_wait = 60001');
like($error,
    qr/60001 ms is outside the valid range for parameter "snowflake.max_clock_rollback_wait" \(0( ms)? \.\. 60000( ms)?\)/,
    'out-of-range rollback wait refused with its range');
# The lead a stored key may have: 0 to an hour (doc/operations.md "Upgrading PostgreSQL").
$error = error_of($primary, "ALTER SYSTEM SET snowflake.key_floor_max_lead = '3600001ms'");
like($error,
    qr/3600001 ms is outside the valid range for parameter "snowflake.key_floor_max_lead" \(0( ms)? \.\. 3600000( ms)?\)/,
    'out-of-range key floor lead refused with its range');
$error = error_of($primary, 'ALTER SYSTEM SET snowflake.key_floor_max_lead = -1');
like($error,
    qr/-1 ms is outside the valid range for parameter "snowflake.key_floor_max_lead" \(0( ms)? \.\. 3600000( ms)?\)/,
    'negative key floor lead refused with its range');

set_and_reload($primary, 'snowflake.machine_id', '9');
is( $primary->safe_psql(
        'postgres',
        'SELECT snowflake_datacenter_id(id) || \'/\' || snowflake_machine_id(id) '
          . 'FROM snowflake_nextval() AS id'),
    '4/9',
    'ids set by ALTER SYSTEM and a reload are used');

# From PostgreSQL 18 on, the library names itself and its version to pg_get_loaded_modules().
SKIP: {
    skip 'pg_get_loaded_modules() is new in PostgreSQL 18', 1 if $primary->pg_version < 18;
    my ($control_version) = slurp_file("$FindBin::RealBin/../../snowflake.control")
      =~ /^default_version = '([^']+)'$/m;
    is( $primary->safe_psql('postgres',
            "SELECT module_name || ' ' || version FROM pg_get_loaded_modules() "
              . "WHERE file_name LIKE 'snowflake%'"),
        "snowflake $control_version",
        'pg_get_loaded_modules() shows the library and the version of the control file');
}

# A standby carries the primary's node ids: generating there is refused.
$primary->backup('base');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'base', has_streaming => 1);
$standby->start;
$primary->wait_for_catchup($standby);
$error = error_of($standby, 'SELECT snowflake_nextval()');
like($error, qr/ERROR:  25006: cannot generate Snowflake ids during recovery/,
    'standby in recovery: 25006');
is($standby->safe_psql('postgres', 'SELECT snowflake_sequence(1724551110457221119)'),
    '4095', 'decoding works on a standby');

$standby->stop;
$primary->stop;

# postgresql.conf with a value out of range and a misspelt name: PostgreSQL only warns at start
# and leaves both settings unset; snowflake_nextval() then says what the log said.
my $misconfigured = PostgreSQL::Test::Cluster->new('misconfigured');
$misconfigured->init;
$misconfigured->append_conf('postgresql.conf', q(
shared_preload_libraries = 'snowflake'
snowflake.datacenter_id = 32
snowflake.machineid = 3
));
$misconfigured->start;
$misconfigured->safe_psql('postgres', 'CREATE EXTENSION snowflake');
my $log = slurp_file($misconfigured->logfile);
like($log, qr/WARNING:  .*32 is outside the valid range for parameter "snowflake.datacenter_id"/,
    'the out-of-range value is only a warning at start');
like($log, qr/WARNING:  .*invalid configuration parameter name "snowflake.machineid"/,
    'so is the misspelt name');
$error = error_of($misconfigured, 'SELECT snowflake_nextval()');
like($error, qr/ERROR:  55000: snowflake.datacenter_id is not set/, 'rejected value: unset, 55000');
like($error,
    qr/DETAIL:  At server start the configuration set it to "32", which was rejected: it must be an integer from 0 to 31/,
    'the error names the rejected value');
set_and_reload($misconfigured, 'snowflake.datacenter_id', '5');
$error = error_of($misconfigured, 'SELECT snowflake_nextval()');
like($error, qr/ERROR:  55000: snowflake.machine_id is not set/, 'misspelt name: unset, 55000');
like($error, qr/DETAIL:  A value outside 0 to 31, or a misspelt snowflake.\* line, in the configuration leaves it unset/,
    'the error points to the likely cause');
$misconfigured->stop;
done_testing();
