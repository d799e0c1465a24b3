# A caller of snowflake_check_peers() who is not a superuser cannot make this server authenticate
# to a peer with the server's own credentials: the client certificate and key in the server
# user's ~/.postgresql/, a service file, a passfile. A superuser can, which shows that the
# certificate is a working credential.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;

plan skip_all => 'openssl is not installed' if system('openssl version >/dev/null 2>&1') != 0;

my $dir = PostgreSQL::Test::Utils::tempdir;
# A CA, the peer's server certificate and the client certificate of the role "checker".
sub openssl {
    my ($arguments) = @_;
    system("openssl $arguments >/dev/null 2>&1") == 0 or die "openssl $arguments failed";
}
openssl("req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=test-ca -keyout $dir/ca.key -out $dir/ca.crt");
for my $name (qw(server client)) {
    my $cn = $name eq 'server' ? '127.0.0.1' : 'checker';
    openssl("req -newkey rsa:2048 -nodes -subj /CN=$cn -keyout $dir/$name.key -out $dir/$name.csr");
    openssl("x509 -req -in $dir/$name.csr -CA $dir/ca.crt -CAkey $dir/ca.key -CAcreateserial "
          . "-days 2 -out $dir/$name.crt");
    chmod 0600, "$dir/$name.key";
}

# The peer asks for a password and a client certificate of the role both.
my $peer = snowflake_node('peer', datacenter_id => 2, machine_id => 2);
$peer->append_conf('postgresql.conf', qq(
listen_addresses = '127.0.0.1'
ssl = on
ssl_cert_file = '$dir/server.crt'
ssl_key_file = '$dir/server.key'
ssl_ca_file = '$dir/ca.crt'
));
open my $hba, '>', $peer->data_dir . '/pg_hba.conf' or die $!;
print $hba "local all all trust\n";
print $hba "hostssl all checker 127.0.0.1/32 scram-sha-256 clientcert=verify-full\n";
close $hba;
$peer->start;
$peer->safe_psql('postgres', q(
CREATE EXTENSION snowflake;
CREATE ROLE checker LOGIN PASSWORD 'checker-password';
));

# The checking server's operating-system user has the client certificate in ~/.postgresql/, a
# service file that names the peer, and a passfile with the password.
my $home = "$dir/home";
mkdir $home;
mkdir "$home/.postgresql";
for my $part (qw(crt key)) {
    PostgreSQL::Test::Utils::append_to_file("$home/.postgresql/postgresql.$part",
        slurp_file("$dir/client.$part"));
    chmod 0600, "$home/.postgresql/postgresql.$part";
}
my $peer_port = $peer->port;
PostgreSQL::Test::Utils::append_to_file("$dir/pg_service.conf",
    "[peer]\nhost=127.0.0.1\nport=$peer_port\ndbname=postgres\nuser=checker\nsslmode=require\n");
PostgreSQL::Test::Utils::append_to_file("$dir/pgpass",
    "127.0.0.1:$peer_port:*:checker:checker-password\n");
chmod 0600, "$dir/pgpass";
my $checker = snowflake_node('checker', datacenter_id => 1, machine_id => 1);
{
    local $ENV{HOME} = $home;
    local $ENV{PGSERVICEFILE} = "$dir/pg_service.conf";
    $checker->start;
}
$checker->safe_psql('postgres', q(
CREATE EXTENSION snowflake;
CREATE ROLE deployer;
GRANT EXECUTE ON FUNCTION snowflake_check_peers(text[], integer, integer) TO deployer;
));

# Checks one peer as the given role and returns its problem, or "none".
sub problem_as {
    my ($role, $conninfo) = @_;
    return $checker->safe_psql('postgres', qq(SET ROLE $role;
SELECT coalesce(problem, 'none') FROM snowflake_check_peers(ARRAY['$conninfo'], 10000, 5000)));
}

my $with_password = "host=127.0.0.1 port=$peer_port dbname=postgres user=checker "
  . 'password=checker-password sslmode=require';
is(problem_as('postgres', $with_password), 'none',
    "a superuser's check authenticates with the password and the server's certificate");
like(problem_as('deployer', $with_password),
    qr/^unreachable: .*certificate/,
    "a deployer's check offers no certificate of the server's, and the peer refuses it");
like(problem_as('deployer', 'service=peer password=checker-password'),
    qr/^not checked: a caller who is not a superuser must give a password in the connection string, and no setting that uses the server's own files/,
    "a deployer may not name the server's service file");
like(problem_as('deployer', "$with_password sslcert=$home/.postgresql/postgresql.crt "
          . "sslkey=$home/.postgresql/postgresql.key"),
    qr/^not checked: /, "nor the server's certificate and key by their paths");
like(problem_as('deployer', "host=127.0.0.1 port=$peer_port dbname=postgres user=checker "
          . "sslmode=require passfile=$dir/pgpass"),
    qr/^not checked: /, "nor a passfile");
like(problem_as('deployer', 'service=peer'), qr/^not checked: /,
    'and without a password of its own it is not checked at all');

done_testing();
