# A streaming standby whose clock is 10 s behind its primary's is promoted after the primary
# issued ids: the marks replayed from WAL keep every new id above every id the primary issued.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;

plan skip_all => 'libfaketime is not installed' unless have_libfaketime();

my $primary = snowflake_node('primary', allows_streaming => 1, datacenter_id => 2,
    machine_id => 3);
$primary->start;
$primary->safe_psql('postgres', q(
CREATE EXTENSION snowflake;
CREATE TABLE issued (id bigint PRIMARY KEY, origin text NOT NULL);
));
$primary->backup('base');

# The standby carries the primary's configuration, node ids included, as a real one would.
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'base', has_streaming => 1);
my $standby_clock = "$PostgreSQL::Test::Utils::tmp_check/clock_offset_005";
set_clock_offset($standby_clock, '-10');
start_with_clock($standby, $standby_clock);

# Ids made after the base backup, so only WAL can tell the standby about them.
$primary->safe_psql('postgres',
    "INSERT INTO issued SELECT snowflake_nextval(), 'primary' FROM generate_series(1, 300000)");
my $primary_max = max_id($primary, 'issued');
$primary->wait_for_catchup($standby);
is(max_id($standby, 'issued'), $primary_max, 'the standby received every id of the primary');

my $error = error_of($standby, 'SELECT snowflake_nextval()');
like($error, qr/ERROR:  25006: cannot generate Snowflake ids during recovery/,
    'a standby in recovery refuses with 25006');
is( $standby->safe_psql('postgres',
        "SELECT persisted_mark >= snowflake_timestamp($primary_max) FROM snowflake_info()"),
    't', "the standby's mark, from WAL, covers the primary's ids");

# A standby restarted before promotion keeps the marks it replayed, through its own mark file.
$standby->stop('immediate');
start_with_clock($standby, $standby_clock);
is( $standby->safe_psql('postgres',
        "SELECT persisted_mark >= snowflake_timestamp($primary_max) FROM snowflake_info()"),
    't', "after a restart the standby's mark still covers the primary's ids");

$primary->stop;
$standby->promote;

# The new primary's clock is 10 s behind the old one: the rollback rule applies, so allow a wait.
# The clock stands 10 s behind the old primary's last id while the call is refused, however long
# the promotion took, then runs from there.
freeze_clock($standby_clock, unix_ms_of($primary_max) - 10_000);
$error = error_of($standby, 'SELECT snowflake_nextval()');
like($error, qr/ERROR:  58000: clock moved backwards by \d+ ms/,
    'after promotion a clock behind the old primary is refused, not reused');
set_and_reload($standby, 'snowflake.max_clock_rollback_wait', '20s');
set_clock_offset($standby_clock, offset_behind($primary_max, 10));
$standby->safe_psql('postgres',
    "INSERT INTO issued SELECT snowflake_nextval(), 'promoted' FROM generate_series(1, 100000)");

my ($count, $low) = split /\|/, $standby->safe_psql('postgres',
    "SELECT count(*), min(id) FROM issued WHERE origin = 'promoted'");
is($count, 100000, 'the promoted standby issued ids');
cmp_ok($low, '>', $primary_max, 'every id of the promoted standby is above every id of the old primary');
is($standby->safe_psql('postgres', 'SELECT count(*) - count(DISTINCT id) FROM issued'),
    0, 'no duplicate among the 400000 ids of both servers');

$standby->stop;
done_testing();
