# The mark file cannot be written while ids are generated: the data directory made read-only, and
# the file replaced by a directory. Generation stops with an error that says what to do before
# any id past the current mark is issued, nothing issued before is repeated, and it resumes by
# itself, without a restart, once the fault is fixed.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use SnowflakeTest;

my $node = snowflake_node('storage', datacenter_id => 13, machine_id => 2);
$node->append_conf('postgresql.conf', "fsync = on\n");
$node->start;
$node->safe_psql('postgres', q(
CREATE EXTENSION snowflake;
CREATE TABLE issued (id bigint PRIMARY KEY);
));
my $data_dir = $node->data_dir;
my $mark_file = "$data_dir/snowflake_mark";

# Generates ids (inserted, so that a repeated one would violate the primary key).
sub generate {
    $node->safe_psql('postgres',
        "INSERT INTO issued SELECT snowflake_nextval() FROM generate_series(1, $_[0])");
}

# With the fault in place and the lease run out, every call fails and issues nothing; once the
# fault is fixed, the next call succeeds above every id before.
sub stops_then_resumes {
    my ($what, $make_fault, $fix_fault, $message) = @_;
    generate(100_000);
    my $max = max_id($node, 'issued');
    my $issued = $node->safe_psql('postgres', 'SELECT ids_generated FROM snowflake_info()');
    $make_fault->();
    # The lease is at most a second ahead of the clock.
    sleep 2;
    my $error = error_of($node, 'INSERT INTO issued SELECT snowflake_nextval()');
    like($error, $message, "$what: generation stops with an error naming the file");
    like($error,
        qr/HINT:  Give the server's operating-system user write access to the data directory/,
        "$what: the hint says what to do");
    is($node->safe_psql('postgres', 'SELECT ids_generated FROM snowflake_info()'),
        $issued, "$what: no id was issued past the mark");
    $fix_fault->();
    generate(10_000);
    is($node->safe_psql('postgres', "SELECT count(*) FROM issued WHERE id > $max"),
        '10000', "$what: once fixed, generation resumes without a restart, above every id before");
}

stops_then_resumes(
    'a read-only data directory',
    sub { chmod 0500, $data_dir or die "chmod: $!" },
    sub { chmod 0700, $data_dir or die "chmod: $!" },
    qr/ERROR:  42501: could not create snowflake mark file "snowflake_mark.tmp": Permission denied/);

stops_then_resumes(
    'a directory in place of the file',
    sub { unlink $mark_file or die "unlink: $!"; mkdir $mark_file or die "mkdir: $!" },
    sub { rmdir $mark_file or die "rmdir: $!" },
    qr/ERROR:  42809: could not put snowflake mark file "snowflake_mark" in place/);

is($node->safe_psql('postgres', 'SELECT count(*) - count(DISTINCT id) FROM issued'),
    '0', 'no id was repeated');
ok(-f $mark_file, 'the mark file is written again');

$node->stop;
done_testing();
