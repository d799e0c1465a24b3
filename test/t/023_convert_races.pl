# snowflake_convert_column() reads the catalog and the keys as they are once its locks are held,
# not as its statement's snapshot saw them before it waited: a foreign key created, a key
# inserted and a referencing table dropped by transactions that commit while the conversion
# waits for its lock are all seen. In REPEATABLE READ and SERIALIZABLE, whose snapshot may be
# older than the tables, it is refused.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;

my $node = snowflake_node('races');
$node->start;
$node->safe_psql('postgres', q(
CREATE EXTENSION snowflake;
CREATE TABLE late_keys (id serial PRIMARY KEY);
CREATE TABLE future_keys (id bigserial PRIMARY KEY);
INSERT INTO future_keys DEFAULT VALUES;
CREATE TABLE dropped_keys (id serial PRIMARY KEY);
CREATE TABLE dropped_refs (dropped_id integer REFERENCES dropped_keys (id));
CREATE TABLE rr_keys (id serial PRIMARY KEY);
));

# The type of a column, as format_type prints it.
sub type_of {
    my ($table, $column) = @_;
    return $node->safe_psql('postgres',
        "SELECT format_type(atttypid, NULL) FROM pg_attribute "
        . "WHERE attrelid = '$table'::regclass AND attname = '$column'");
}

# Begins the conversion in a session of its own and returns the session once the conversion
# waits for a lock that another session's open transaction holds.
sub start_waiting_conversion {
    my ($table) = @_;
    my $session = $node->background_psql('postgres', on_error_stop => 0);
    $session->query_until(qr/started\n/,
        "\\echo started\nSELECT count(*) FROM snowflake_convert_column('$table', 'id');\n");
    $node->poll_query_until('postgres',
        "SELECT EXISTS (SELECT FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
          . "AND query LIKE '%snowflake_convert_column(''$table''%')")
      or die "the conversion of $table does not wait for its lock";
    return $session;
}

# Waits for the conversion to end and returns what it wrote to stderr ('' when it succeeded).
sub finish_conversion {
    my ($session) = @_;
    $session->query('\echo finished');
    my $errors = $session->{stderr};
    $session->quit;
    return $errors;
}

# A foreign key created while the conversion waits for the lock on the key's table.
my $other = $node->background_psql('postgres');
$other->query_safe(
    'BEGIN; CREATE TABLE late_refs (late_id integer REFERENCES late_keys (id))');
my $conversion = start_waiting_conversion('late_keys');
$other->query_safe('COMMIT');
is(finish_conversion($conversion), '', 'the conversion that waited for a new foreign key ends');
is(type_of('late_refs', 'late_id'), 'bigint',
    'the foreign key committed while it waited is followed and its column widened');

# A key past every new id inserted while the conversion waits for the lock.
$other->query_safe('BEGIN; INSERT INTO future_keys VALUES '
      . "(snowflake_min_id(now() + interval '1 day'))");
$conversion = start_waiting_conversion('future_keys');
$other->query_safe('COMMIT');
like(finish_conversion($conversion), qr/holds keys up to \d+, which new Snowflake ids could repeat/,
    'a key committed while the conversion waited is seen and refuses it');
is($node->safe_psql('postgres',
        "SELECT pg_get_expr(adbin, adrelid) FROM pg_attrdef WHERE adrelid = 'future_keys'::regclass"),
    "nextval('future_keys_id_seq'::regclass)", 'and nothing was changed');

# A referencing table dropped while the conversion waits for the lock.
$other->query_safe('BEGIN; DROP TABLE dropped_refs');
$conversion = start_waiting_conversion('dropped_keys');
$other->query_safe('COMMIT');
is(finish_conversion($conversion), '',
    'a referencing table dropped while the conversion waited is left out, without an error');
is(type_of('dropped_keys', 'id'), 'bigint', 'and the key is converted');

# REPEATABLE READ and SERIALIZABLE: the transaction's snapshot may be older than the tables
# (ALTER TABLE itself would fail on a foreign key newer than it): refused, nothing changed.
for my $level ('REPEATABLE READ', 'SERIALIZABLE') {
    my $session = $node->background_psql('postgres', on_error_stop => 0);
    $session->query_safe("BEGIN ISOLATION LEVEL $level; SELECT 1");
    $node->safe_psql('postgres',
        'CREATE TABLE rr_refs (rr_id integer REFERENCES rr_keys (id))');
    $session->query("SELECT count(*) FROM snowflake_convert_column('rr_keys', 'id')");
    like($session->{stderr},
        qr/ERROR:  snowflake_convert_column\(\) cannot run in a REPEATABLE READ or SERIALIZABLE/,
        "in $level, the conversion is refused");
    $session->quit;
    is(type_of('rr_keys', 'id') . ' ' . type_of('rr_refs', 'rr_id'), 'integer integer',
        'and nothing was changed');
    $node->safe_psql('postgres', 'DROP TABLE rr_refs');
}
$other->quit;

# A table of another role on the key's paths is refused before it is locked: a role converting
# its own table cannot hold a stranger's locked while it waits for one of its own.
$node->safe_psql('postgres', q(
CREATE ROLE stranger_owner;
CREATE ROLE key_owner;
CREATE TABLE her_keys (id serial PRIMARY KEY);
ALTER TABLE her_keys OWNER TO key_owner;
GRANT REFERENCES ON her_keys TO PUBLIC;
CREATE TABLE stranger_refs (key_id integer REFERENCES her_keys (id));
ALTER TABLE stranger_refs OWNER TO stranger_owner;
CREATE TABLE her_refs (key_id integer REFERENCES her_keys (id));
ALTER TABLE her_refs OWNER TO key_owner;
));
my $holder = $node->background_psql('postgres');
$holder->query_safe('BEGIN; LOCK TABLE her_refs IN ACCESS EXCLUSIVE MODE');
my ($ret, $stdout, $stderr) = $node->psql('postgres', q(SET statement_timeout = '20s';
SET ROLE key_owner;
SELECT count(*) FROM snowflake_convert_column('her_keys', 'id')));
like($stderr, qr/ERROR:  the tables that hold the key public\.her_keys\.id do not all belong to key_owner/,
    "a stranger's table on the paths is refused at once");
is($node->safe_psql('postgres', q(SELECT count(*) FROM pg_locks
    WHERE relation = 'stranger_refs'::regclass AND mode = 'AccessExclusiveLock')),
    '0', 'and was never locked');
$holder->query_safe('COMMIT');
$holder->quit;

done_testing();
