# Readers that follow a tracked table's changes with snowflake_changes() end with a copy equal to
# the table, row for row, while eight writers insert, update, change keys, delete, truncate, roll
# back, roll back to savepoints, hold their transactions open and prepare them, and one prepared
# transaction lives through a restart and a crash. Two readers follow at different speeds. A
# reader that follows the versions alone, without the settled bound, is seen missing the prepared
# transaction's row, so the test can fail. Each phase ends when that reader has read a number of
# changes, never after a time, so that a busy machine only makes it longer.
use strict;
use warnings;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;

my $node = snowflake_node('changes', datacenter_id => 7, machine_id => 8);
$node->append_conf('postgresql.conf', "max_prepared_transactions = 12\nfsync = on\n");
$node->start;
# The first id ends the read of stored keys that a start without a mark file begins, before any
# writer locks the table: a TRUNCATE holds it while its trigger draws a version, and the read
# would fail on the lock.
$node->safe_psql('postgres', q(CREATE EXTENSION snowflake;
SELECT snowflake_nextval();
CREATE TABLE items (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), n integer NOT NULL,
    note text);
SELECT snowflake_track_changes('items');
CREATE TABLE copy_fast (id bigint PRIMARY KEY, n integer NOT NULL, note text, version bigint);
CREATE TABLE copy_slow (LIKE copy_fast INCLUDING ALL);
CREATE TABLE copy_naive (LIKE copy_fast INCLUDING ALL);
CREATE TABLE copy_late (LIKE copy_fast INCLUDING ALL);

-- Applies one page of changes to a copy; returns the cursor to pass next.
CREATE FUNCTION follow_into(copy regclass, cursor_at bigint, page integer) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    c record;
    next_cursor bigint;
BEGIN
    FOR c IN SELECT * FROM snowflake_changes(NULL::items, cursor_at, page) LOOP
        CASE c.kind
        WHEN 'row' THEN
            EXECUTE format('INSERT INTO %s VALUES (($1).id, ($1).n, ($1).note, ($1).version) '
                           'ON CONFLICT (id) DO UPDATE SET n = excluded.n, note = excluded.note, '
                           'version = excluded.version', copy) USING c.data;
        WHEN 'delete' THEN
            EXECUTE format('DELETE FROM %s WHERE id = ($1).id', copy) USING c.data;
        WHEN 'truncate' THEN
            EXECUTE format('DELETE FROM %s', copy);
        WHEN 'next' THEN
            next_cursor := c.version;
        END CASE;
    END LOOP;
    RETURN next_cursor;
END
$$;

-- The same by the versions alone, as a reader of an updated_at column does: every row and
-- tombstone above the highest version it has seen. Returns the new highest and how many changes
-- it applied.
CREATE FUNCTION follow_naively(seen bigint, OUT highest bigint, OUT applied integer)
LANGUAGE plpgsql AS $$
DECLARE
    c record;
BEGIN
    highest := seen;
    applied := 0;
    FOR c IN SELECT i.version, 'row' AS kind, i.id, i.n, i.note FROM items AS i
             WHERE i.version > seen
             UNION ALL
             SELECT d.version, d.kind::text, (d.key->>'id')::bigint, NULL, NULL
             FROM snowflake_catalog.snowflake_tombstones AS d
             WHERE d.tracked = 'items'::regclass AND d.version > seen
             ORDER BY 1 LOOP
        IF c.kind = 'row' THEN
            INSERT INTO copy_naive VALUES (c.id, c.n, c.note, c.version)
            ON CONFLICT (id) DO UPDATE SET n = excluded.n, note = excluded.note,
                version = excluded.version;
        ELSIF c.kind = 'd' THEN
            DELETE FROM copy_naive WHERE id = c.id;
        ELSE
            DELETE FROM copy_naive;
        END IF;
        highest := c.version;
        applied := applied + 1;
    END LOOP;
END
$$;
));

# Each transaction of a writer does one of: insert, update, change a key, delete, or insert and
# roll back to a savepoint; holds its transaction open for up to 40 ms; then commits, or one
# time in ten rolls back, or one in ten prepares and commits the prepared transaction. One
# transaction in 1000 truncates the table instead, unless :truncating is 0: a TRUNCATE would wait
# for a prepared transaction that holds the table, and every writer and reader behind it.
my $writer_script = "$PostgreSQL::Test::Utils::tmp_check/writer_035.sql";
PostgreSQL::Test::Utils::append_to_file($writer_script, q(\set op random(1, 100)
\set end random(1, 10)
\set truncation random(1, 1000) * :truncating
\if :truncation = 1
TRUNCATE items;
\else
BEGIN;
\if :op <= 40
INSERT INTO items (n, note) VALUES (:client_id, 'new');
\elif :op <= 65
UPDATE items SET n = n + 1, note = 'updated'
    WHERE id = (SELECT id FROM items ORDER BY id DESC OFFSET :op LIMIT 1);
\elif :op <= 75
UPDATE items SET id = snowflake_nextval(), note = 'moved'
    WHERE id = (SELECT id FROM items ORDER BY id DESC OFFSET :op LIMIT 1);
\elif :op <= 90
DELETE FROM items WHERE id = (SELECT id FROM items ORDER BY id DESC OFFSET :op - 70 LIMIT 1);
\else
SAVEPOINT before;
INSERT INTO items (n, note) VALUES (:client_id, 'rolled back');
ROLLBACK TO SAVEPOINT before;
UPDATE items SET note = 'after savepoint'
    WHERE id = (SELECT id FROM items ORDER BY id DESC OFFSET :op - 80 LIMIT 1);
\endif
SELECT pg_sleep(random() * 0.04);
\if :end = 1
ROLLBACK;
\elif :end = 2
PREPARE TRANSACTION 'writer:client_id';
COMMIT PREPARED 'writer:client_id';
\else
COMMIT;
\endif
\endif
));
# The writers run until follow() stops them; the hour is only a limit for a test gone wrong.
sub start_writers {
    my ($truncating) = @_;
    my ($out, $err) = ('', '');
    return IPC::Run::start(
        [ 'pgbench', '-n', '-c', '8', '-j', '8', '-T', '3600', '-D', "truncating=$truncating",
            '-f', $writer_script,
            $node->connstr('postgres') ],
        '>', \$out, '2>', \$err);
}

# The readers' cursors, kept across the phases, and the changes the naive reader applied. The
# slow reader reads a small page every other round, unless $catch_up.
my ($fast_cursor, $slow_cursor, $naive_seen, $naive_applied, $rounds) = (0, 0, 0, 0, 0);
my $late_cursor;
sub read_once {
    my ($catch_up) = @_;
    $fast_cursor = $node->safe_psql('postgres',
        "SELECT follow_into('copy_fast', $fast_cursor, 1000)");
    $late_cursor = $node->safe_psql('postgres',
        "SELECT follow_into('copy_late', $late_cursor, 1000)") if defined $late_cursor;
    $slow_cursor = $node->safe_psql('postgres',
        "SELECT follow_into('copy_slow', $slow_cursor, 100)") if $catch_up || ++$rounds % 2 == 0;
    my ($highest, $applied) = split /\|/,
      $node->safe_psql('postgres', "SELECT * FROM follow_naively($naive_seen)");
    $naive_seen = $highest;
    $naive_applied += $applied;
}

# Runs the writers and reads all the while, until the naive reader has applied $changes more
# changes (the others read none while a prepared transaction holds the bound); then stops the
# writers and waits until their sessions are gone.
sub follow {
    my ($changes, $truncating, $copy_late) = @_;
    my $until = $naive_applied + $changes;
    my $writers = start_writers($truncating);
    while ($naive_applied < $until) {
        $writers->pump_nb;
        $writers->pumpable or die 'the writers stopped before enough changes were made';
        read_once(0);
        # The first copy under load, by the recipe of doc/reference.md "snowflake_changes()":
        # the bound in a statement of its own, then the copy, then following from that bound.
        if ($copy_late && !defined $late_cursor && $naive_applied > 0) {
            my $start = $node->safe_psql('postgres', 'SELECT snowflake_settled_bound()');
            $node->safe_psql('postgres',
                'INSERT INTO copy_late SELECT id, n, note, version FROM items');
            $late_cursor = $start;
        }
    }
    $writers->kill_kill;
    $node->poll_query_until('postgres',
        q(SELECT count(*) = 0 FROM pg_stat_activity WHERE application_name = 'pgbench'))
      or die 'the writers\' sessions did not end';
    $node->safe_psql('postgres', "COMMIT PREPARED '$_'") for split /\n/, $node->safe_psql(
        'postgres', q(SELECT gid FROM pg_prepared_xacts WHERE gid LIKE 'writer%'));
}

follow(600, 1);
$node->safe_psql('postgres', 'TRUNCATE items');
# A prepared transaction changes a row and holds every reader at its version across a restart
# and a crash.
$node->safe_psql('postgres', q(BEGIN;
INSERT INTO items (n, note) VALUES (-1, 'held');
PREPARE TRANSACTION 'held'));
follow(400, 0);
$node->restart;
follow(400, 0, 1);
kill9_and_wait($node);
$node->start;
follow(400, 0);
$node->safe_psql('postgres', "COMMIT PREPARED 'held'");
# Its row commits long after later versions were read. The readers by the bound read it; the
# reader by the versions alone has passed its version and never will.
my $held_in = q(SELECT count(*) FROM COPY WHERE n = -1);
(my $held_in_fast = $held_in) =~ s/COPY/copy_fast/;
(my $held_in_naive = $held_in) =~ s/COPY/copy_naive/;
for (1 .. 100) {
    read_once(1);
    last if $node->safe_psql('postgres', $held_in_fast) eq '1';
}
is($node->safe_psql('postgres', $held_in_fast), '1',
    'the fast reader read the row of the transaction prepared before a restart and a crash');
is($node->safe_psql('postgres', $held_in_naive), '0',
    'the reader by the versions alone never reads it');
follow(400, 1);

# Every writer has ended: the readers read until a page is not full and ends at a bound above
# every version there is.
my $last = $node->safe_psql('postgres', q(SELECT greatest(
    (SELECT max(version) FROM items), (SELECT max(version) FROM snowflake_catalog.snowflake_tombstones))));
for (1 .. 10000) {
    read_once(1);
    last if $fast_cursor > $last && $slow_cursor > $last && $late_cursor > $last;
}
cmp_ok($slow_cursor, '>', $last, 'both readers passed the last change');

my $differs = q(SELECT count(*) FROM ((SELECT id, n, note, version FROM items
    EXCEPT SELECT * FROM COPY) UNION ALL (SELECT * FROM COPY
    EXCEPT SELECT id, n, note, version FROM items)) AS d);
(my $fast_sql = $differs) =~ s/COPY/copy_fast/g;
(my $slow_sql = $differs) =~ s/COPY/copy_slow/g;
(my $naive_sql = $differs) =~ s/COPY/copy_naive/g;
(my $late_sql = $differs) =~ s/COPY/copy_late/g;
my $rows = $node->safe_psql('postgres', 'SELECT count(*) FROM items');
note("the table holds $rows rows at the end");
is($node->safe_psql('postgres', $fast_sql), '0', 'the fast reader\'s copy equals the table');
is($node->safe_psql('postgres', $slow_sql), '0', 'the slow reader\'s copy equals the table');
is($node->safe_psql('postgres', $late_sql), '0',
    'a reader that copied the table under load and then followed it has a copy equal to it');
note('the reader by the versions alone ends with ' . $node->safe_psql('postgres', $naive_sql)
      . ' rows that differ');
my ($deletes, $truncations) = split /\|/, $node->safe_psql('postgres',
    q(SELECT count(*) FILTER (WHERE kind = 'd'), count(*) FILTER (WHERE kind = 't')
      FROM snowflake_catalog.snowflake_tombstones));
cmp_ok($deletes, '>', 0, "the writers deleted rows and changed keys ($deletes tombstones)");
cmp_ok($truncations, '>', 0, "and truncated the table ($truncations times)");

$node->stop;
done_testing();
