# snowflake_check_peers() against a peer that answers its query with something other than one row
# of six columns: the problem says what was wrong, never an empty "query failed: ". The peer is a
# minimal imitation of the PostgreSQL wire protocol on 127.0.0.1, since a real server always
# answers the query with one row.
use strict;
use warnings;
use IO::Select;
use IO::Socket::INET;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes;
use SnowflakeTest;

# One backend message: its type byte, then its length (which counts itself) and its body.
sub message {
    my ($type, $body) = @_;
    return $type . pack('N', 4 + length $body) . $body;
}

# Reads exactly $size bytes, or dies.
sub read_exactly {
    my ($socket, $size) = @_;
    my $data = '';
    while (length $data < $size) {
        my $read = sysread($socket, $data, $size - length $data, length $data);
        die "peer: connection closed: $!" unless $read;
    }
    return $data;
}

# Serves one connection: protocol 3.0, authentication without a password, then the given number
# of rows of $columns text columns for every query (the given values, \N for NULL, or 1 in each),
# until the client says goodbye. A client that asks for a later minor version or for protocol
# options (_pq_.*) is told, as a real server tells it, that this server speaks 3.0 without them:
# PostgreSQL 19's libpq asks for an unassigned version on purpose and drops a server that accepts.
sub serve_connection {
    my ($socket, $rows, $columns, @values) = @_;
    my $startup_size = unpack('N', read_exactly($socket, 4));
    my ($version, $parameters) = unpack('N a*', read_exactly($socket, $startup_size - 4));
    my %parameters = split /\0/, $parameters;
    my @unknown_options = sort grep { /^_pq_\./ } keys %parameters;
    # The version offered back is whole, major in the upper 16 bits (as the server sends it).
    my $negotiation =
      ($version & 0xFFFF) > 0 || @unknown_options
      ? message('v',
        pack('NN', 3 << 16, scalar @unknown_options) . join '', map { "$_\0" } @unknown_options)
      : '';
    syswrite($socket,
        $negotiation
          . message('R', pack('N', 0))
          . message('K', pack('NN', 4242, 1))
          . message('Z', 'I'));
    while (1) {
        my $type = read_exactly($socket, 1);
        my $size = unpack('N', read_exactly($socket, 4));
        read_exactly($socket, $size - 4);
        return if $type eq 'X';
        my $fields = join '',
          map { "column$_\0" . pack('NnNnNn', 0, 0, 25, -1 & 0xFFFF, 0xFFFFFFFF, 0) }
          1 .. $columns;
        my @cells = map { $values[ $_ - 1 ] // '1' } 1 .. $columns;
        # A cell of \N is a NULL: its length is -1 and no bytes follow.
        my $row = pack('n', $columns) . join '',
          map { $_ eq '\N' ? pack('N', 0xFFFFFFFF) : pack('N', length $_) . $_ } @cells;
        syswrite($socket,
            message('T', pack('n', $columns) . $fields)
              . join('', map { message('D', $row) } 1 .. $rows)
              . message('C', "SELECT $rows\0")
              . message('Z', 'I'));
    }
}

my $listener = IO::Socket::INET->new(
    LocalAddr => '127.0.0.1',
    LocalPort => 0,
    Listen => 5,
    ReuseAddr => 1) or die "listen: $!";
my $port = $listener->sockport;
my @answers = ([0, 4], [2, 4], [1, 3]);
# A peer whose datacenter id is set and whose machine id is not, with the right clock, the
# extension installed, not in recovery, and no instance token (a library before 1.4).
my $one_id_set = [1, 6, '7', '-1', 'CLOCK', 't', 'f', '\N'];
# However the test ends, the imitation peer does not outlive it: the test holds the write end of
# this pipe, which its end closes, and the peer waits for a connection or for that.
pipe(my $test_gone, my $test_alive) or die "pipe: $!";
my $server_pid = fork() // die "fork: $!";
if ($server_pid == 0) {
    close $test_alive;
    my $waiting = IO::Select->new($listener, $test_gone);
    for my $answer (@answers, $one_id_set) {
        my ($ready) = $waiting->can_read;
        exit 1 if $ready == $test_gone;
        my $socket = $listener->accept or exit 1;
        # The clock is read when the query comes, in the Unix microseconds the check asks for.
        my @answer = map { $_ eq 'CLOCK' ? sprintf('%.0f', Time::HiRes::time() * 1e6) : $_ }
          @$answer;
        serve_connection($socket, @answer);
        close $socket;
    }
    exit 0;
}
close $test_gone;
close $listener;
# If the test dies before the peer has served every connection, the peer must not keep prove
# waiting for its output.
END { kill 'KILL', $server_pid if $server_pid; }

my $node = snowflake_node('checker');
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION snowflake');
my $peer = "host=127.0.0.1 port=$port dbname=fake sslmode=disable gssencmode=disable";
for my $answer (@answers) {
    my ($rows, $columns) = @$answer;
    my $answered = sprintf('%d row%s of %d columns', $rows, $rows == 1 ? '' : 's', $columns);
    is( $node->safe_psql('postgres',
            "SELECT problem FROM snowflake_check_peers(ARRAY['$peer'], 10000, 5000)"),
        "query failed: the server answered $answered, where the check expects 1 row of 6; "
          . 'is it a PostgreSQL server?',
        "a peer that answers $answered is reported as such");
}
is( $node->safe_psql('postgres',
        "SELECT concat_ws('|', datacenter_id, coalesce(machine_id::text, 'NULL'), problem) "
          . "FROM snowflake_check_peers(ARRAY['$peer'], 10000, 5000)"),
    '7|NULL|node ids not set',
    'a peer with one id set shows that id, the other as NULL, and says the ids are not set');
waitpid($server_pid, 0);
is($?, 0, 'the imitation peer served every connection');
$server_pid = 0;

# A peer whose backlog is full: the kernel completes no more handshakes, so a connect stays under
# way until its SYNs run out (about two minutes). Each check must still end at its own time limit
# (libpq, asked too early, would take the connection for made and wait for it without one).
my $full = IO::Socket::INET->new(
    LocalAddr => '127.0.0.1',
    LocalPort => 0,
    Listen => 1,
    ReuseAddr => 1) or die "listen: $!";
my $full_peer = 'host=127.0.0.1 port=' . $full->sockport . ' dbname=fake';
for my $attempt (1 .. 4) {
    my ($ret, $stdout) = $node->psql('postgres',
        "SELECT problem FROM snowflake_check_peers(ARRAY['$full_peer'], 10000, 1000)",
        timeout => 30);
    is($stdout, 'did not answer within 1000 ms',
        "check $attempt of a peer whose backlog is full ends at its time limit");
}

$node->stop;
done_testing();
