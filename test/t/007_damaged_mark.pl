# A damaged, unreadable or foreign mark file is reported with its name and the way out, and no id
# is issued until the operator has dealt with it. None of them can hang the server's start. A mark
# file of another cluster, or a version 1 file, which names no cluster, is kept as a lower bound,
# but the stored keys are read as after a start without one.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use SnowflakeTest;

my $node = snowflake_node('damaged', datacenter_id => 11, machine_id => 12);
$node->start;
$node->safe_psql('postgres', q(
CREATE EXTENSION snowflake;
CREATE TABLE issued (id bigint PRIMARY KEY);
INSERT INTO issued SELECT snowflake_nextval() FROM generate_series(1, 10000);
));
my $mark_file = $node->data_dir . '/snowflake_mark';
my $system = $node->safe_psql('postgres', 'SELECT system_identifier FROM pg_control_system()');
$node->stop;
like(slurp_file($mark_file),
    qr/\Asnowflake mark v2\nsystem_identifier=$system\ndatacenter_id=11\nmachine_id=12\nmark_unix_ms=\d+\ncrc32c=[0-9a-f]{8}\n\z/,
    "a clean stop leaves a mark file in the documented format, naming the cluster's system identifier and the node pair");

# Refuses, naming the file and the way out, and issues nothing. The way out is to remove the file
# unless a hint pattern says otherwise.
sub refuses_with {
    my ($pattern, $what, $hint) = @_;
    my $error = error_of($node, 'SELECT snowflake_nextval()');
    like($error, $pattern, "$what: refused with a message naming the file");
    like($error, $hint // qr/HINT:  .*remove the file and restart the server/,
        "$what: the hint gives the way out");
    is($node->safe_psql('postgres', 'SELECT ids_generated FROM snowflake_info()'),
        '0', "$what: nothing was issued");
    like(error_of($node, 'SELECT snowflake_settled_bound()'), $pattern,
        "$what: the settled bound is refused as ids are");
}

# A file with a valid checksum around any mark, as a buggy or hostile writer could leave it; by
# this cluster unless another system identifier is given, or version 1 with 'v1'.
sub mark_file_with_checksum {
    my ($mark, $writer) = @_;
    return mark_file_text($mark, $writer // $system, 11, 12);
}

# One digit of the mark changed: the checksum no longer matches.
my $contents = slurp_file($mark_file);
(my $changed = $contents) =~ s/mark_unix_ms=(\d+)(\d)\n/"mark_unix_ms=$1" . (($2 + 1) % 10) . "\n"/e;
isnt($changed, $contents, 'the test changed the mark');
unlink $mark_file;
PostgreSQL::Test::Utils::append_to_file($mark_file, $changed);
$node->start;
refuses_with(qr/ERROR:  XX001: snowflake mark file ".*snowflake_mark" is damaged/,
    'a checksum mismatch');
like(slurp_file($node->logfile), qr/snowflake mark file "snowflake_mark" is damaged/,
    'the server log says so at start-up');
$node->stop;

# Truncated, as a torn write would leave it.
unlink $mark_file;
PostgreSQL::Test::Utils::append_to_file($mark_file, substr($contents, 0, 20));
$node->start;
refuses_with(qr/ERROR:  XX001: snowflake mark file ".*snowflake_mark" is damaged/, 'a torn file');
$node->stop;

# The helper writes exactly what the server writes, so the files below differ only where meant.
is(mark_file_with_checksum($contents =~ /mark_unix_ms=(\d+)/), $contents,
    'the test writes files in the format the server writes');

# A valid checksum around a mark no id can carry (it would wrap the generator).
unlink $mark_file;
PostgreSQL::Test::Utils::append_to_file($mark_file,
    mark_file_with_checksum('9223372036854775807'));
$node->start;
refuses_with(qr/ERROR:  XX001: snowflake mark file ".*snowflake_mark" is damaged/,
    'a mark past the timestamp field');
$node->stop;

# Present but unreadable: the way out is the permission, not removing the file.
unlink $mark_file;
PostgreSQL::Test::Utils::append_to_file($mark_file, $contents);
chmod 0000, $mark_file;
$node->start;
refuses_with(qr/ERROR:  XX001: could not read snowflake mark file ".*snowflake_mark": Permission denied/,
    'an unreadable file',
    qr/HINT:  Give the operating-system user that runs the server read and write access to the file, then restart the server. Do not remove it/);
$node->stop;

# A FIFO would block the postmaster's open() for ever: refused instead, and start and stop
# both complete.
unlink $mark_file;
system('mkfifo', $mark_file) == 0 or die "mkfifo: $!";
$node->start;
refuses_with(qr/ERROR:  XX001: snowflake mark file ".*snowflake_mark" is not a regular file/,
    'a FIFO');
like(slurp_file($node->logfile), qr/snowflake mark file "snowflake_mark" is not a regular file/,
    'the server log says so at start-up');
$node->stop('fast');

# A dangling symbolic link is not "no file" (which would leave uniqueness to the clock alone).
unlink $mark_file;
symlink($node->data_dir . '/no_such_mark', $mark_file) or die "symlink: $!";
$node->start;
refuses_with(qr/ERROR:  XX001: snowflake mark file ".*snowflake_mark" is not a regular file/,
    'a dangling symbolic link');
$node->stop;

# The way out: with the clock past every id, remove the file and restart.
unlink $mark_file;
$node->start;
my $max = max_id($node, 'issued');
$node->safe_psql('postgres',
    'INSERT INTO issued SELECT snowflake_nextval() FROM generate_series(1, 10000)');
is($node->safe_psql('postgres', "SELECT count(*) FROM issued WHERE id > $max"),
    '10000', 'after the file is removed and the server restarted, generation resumes');
ok(-e $mark_file, 'and a new mark file is written');
$node->stop;

# A mark file another cluster wrote (another system identifier), half a second ahead of every id
# issued here: its mark is kept, and the keys are read before the first id.
$contents = slurp_file($mark_file);
my ($last_mark) = $contents =~ /mark_unix_ms=(\d+)/;
my $foreign_mark = $last_mark + 500;
unlink $mark_file;
PostgreSQL::Test::Utils::append_to_file($mark_file,
    mark_file_with_checksum($foreign_mark, '1234567890123456789'));
my $offset = -s $node->logfile;
$node->start;
$max = max_id($node, 'issued');
my $first = $node->safe_psql('postgres', 'SELECT snowflake_nextval()');
ok($node->log_contains(qr/snowflake mark file "snowflake_mark" was written by another cluster\n.*DETAIL:  It names system identifier 1234567890123456789, and this cluster's is $system/,
        $offset),
    "another cluster's mark file is named as such");
ok($node->log_contains(qr/the stored keys of \d+ databases were read/, $offset),
    'and the stored keys are read before the first id');
cmp_ok($node->safe_psql('postgres', "SELECT snowflake_unix_ms($first)"), '>', $foreign_mark,
    'its mark is kept as a lower bound');
cmp_ok($first, '>', $max, 'and no id was issued twice');
$node->stop;

# A version 1 file, as releases before 1.10 wrote it, names no cluster: it may have been copied
# from anywhere (1.8's upgrade notes had operators copy it), so since 1.11 it is a lower bound
# only, and the stored keys are read as after a start without the file. Planted an hour behind,
# with keys of this server's pair stored a few seconds ahead of the clock, the first id is above
# every one of them.
$node->start;
$node->safe_psql('postgres', q(
INSERT INTO issued SELECT snowflake_encode(now() + interval '3 seconds', 11, 12, n)
FROM generate_series(0, 9) AS n));
my $highest_key = $node->safe_psql('postgres', 'SELECT max(id) FROM issued');
$node->stop;
unlink $mark_file;
PostgreSQL::Test::Utils::append_to_file($mark_file,
    mark_file_with_checksum(time() * 1000 - 3600000, 'v1'));
$offset = -s $node->logfile;
$node->start;
ok($node->log_contains(qr/snowflake mark file "snowflake_mark" is of the first format/, $offset),
    'a version 1 file is reported as naming no cluster');
my $after_v1;
for (1 .. 600) {
    $after_v1 = eval { $node->safe_psql('postgres', 'SELECT snowflake_nextval()') };
    last if defined $after_v1;
    usleep(100_000);
}
cmp_ok($after_v1, '>', $highest_key,
    'with a version 1 file, the first id is above every stored key of the pair');
ok($node->log_contains(qr/the stored keys of \d+ databases were read/, $offset),
    'after a read of the keys');

# The mark speaks for the ids of the pair that wrote it. With another pair set, by a reload or
# before a restart, the stored keys of that pair are read before its first id: a key of that pair
# a few seconds ahead holds the first id back until the clock passes it.
sub first_id_of_pair {
    my ($key, $what) = @_;
    my $id;
    for (1 .. 600) {
        $id = eval { $node->safe_psql('postgres', 'SELECT snowflake_nextval()') };
        last if defined $id;
        usleep(100_000);
    }
    cmp_ok($id, '>', $key, "$what: the first id of the pair is above its stored key");
    ok($node->log_contains(qr/the stored keys of \d+ databases were read/, $offset),
        "$what: after a read of the keys");
}
my $key = $node->safe_psql('postgres', q(
INSERT INTO issued VALUES (snowflake_encode(now() + interval '2 seconds', 11, 13, 0))
RETURNING id));
$offset = -s $node->logfile;
$node->adjust_conf('postgresql.conf', 'snowflake.machine_id', '13');
$node->reload;
$node->poll_query_until('postgres', q(SELECT current_setting('snowflake.machine_id') = '13'))
  or die 'the reload did not set snowflake.machine_id';
first_id_of_pair($key, 'another pair by a reload');
$key = $node->safe_psql('postgres', q(
INSERT INTO issued VALUES (snowflake_encode(now() + interval '2 seconds', 11, 14, 0))
RETURNING id));
$node->stop;
$node->adjust_conf('postgresql.conf', 'snowflake.machine_id', '14');
$offset = -s $node->logfile;
$node->start;
first_id_of_pair($key, 'another pair by a restart');
$node->stop;
done_testing();
