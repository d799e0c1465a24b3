# The floor from stored keys after a start without the mark file, against hostile and unusual
# tables (doc/operations.md "Guarantees", doc/security.md "The floor from stored keys"): a plain
# role's table with forced row-level security whose policy hides rows from its owner and fails
# without a setting, an attached partition and sub-partitions without a default of their own, an
# inheritance child, a domain's default, a table whose owner revoked its own privileges, a table
# with a trap in an index expression and a trigger; keys of another node pair, a table kept
# locked; tables keyed by the snowflake type (its own default through the assignment cast, a
# domain over it, a partitioned table, a column with only an index). Then rows moved during the
# read, keys of transactions in progress or prepared, and more tables than the lock table holds.
# The rules of the read of every database are in 034_keys_floor_databases.pl.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;

plan skip_all => 'libfaketime is not installed' unless have_libfaketime();

my $clock_file = "$PostgreSQL::Test::Utils::tmp_check/clock_offset_019";
# Everything below is alice's: a plain role, who can only create tables in her schema.
my $node = keys_floor_node('keys', $clock_file, q(
snowflake.key_floor_max_lead = '20min'
max_prepared_transactions = 2
max_connections = 20
max_locks_per_transaction = 10
));
# The hand-made keys (below) are ahead of one instant; the partitions split them between those of
# 601 and 602 s ahead.
my $base = $node->safe_psql('postgres', 'SELECT now()');
my $late_bound = $node->safe_psql('postgres',
    qq(SELECT snowflake_encode('$base'::timestamptz + interval '601500 ms', 0, 0, 0)));
$node->safe_psql('postgres', qq(
SET ROLE alice;
SET search_path = "Odd Schema", public;
CREATE TABLE "tenant rows" (id bigint PRIMARY KEY DEFAULT snowflake_nextval(),
    tenant text NOT NULL DEFAULT current_setting('app.tenant'));
ALTER TABLE "tenant rows" ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
CREATE POLICY own_tenant ON "tenant rows" USING (tenant = current_setting('app.tenant'));

CREATE TABLE events (id bigint NOT NULL DEFAULT snowflake_nextval(), note text)
    PARTITION BY RANGE (id);
CREATE TABLE "events early" (id bigint NOT NULL, note text);
ALTER TABLE events ATTACH PARTITION "events early" FOR VALUES FROM (0) TO ($late_bound);
CREATE TABLE events_late (id bigint NOT NULL, note text) PARTITION BY HASH (id);
CREATE TABLE events_late_0 (id bigint NOT NULL, note text);
CREATE TABLE events_late_1 (id bigint NOT NULL, note text);
ALTER TABLE events_late ATTACH PARTITION events_late_0 FOR VALUES WITH (MODULUS 2, REMAINDER 0);
ALTER TABLE events_late ATTACH PARTITION events_late_1 FOR VALUES WITH (MODULUS 2, REMAINDER 1);
ALTER TABLE events ATTACH PARTITION events_late FOR VALUES FROM ($late_bound) TO (MAXVALUE);

CREATE TABLE base (id bigint PRIMARY KEY DEFAULT snowflake_nextval());
CREATE TABLE child () INHERITS (base);
ALTER TABLE child ALTER id DROP DEFAULT;

CREATE DOMAIN key_domain AS bigint DEFAULT snowflake_nextval();
CREATE TABLE "domain keyed" (id key_domain PRIMARY KEY, x integer);

CREATE TABLE revoked (id bigint PRIMARY KEY DEFAULT snowflake_nextval());

CREATE FUNCTION trap(integer) RETURNS integer IMMUTABLE LANGUAGE plpgsql AS \$\$
BEGIN
    IF current_user <> 'alice' THEN
        RAISE EXCEPTION 'trap ran as %', current_user;
    END IF;
    RETURN \$1;
END \$\$;
CREATE FUNCTION trap_trigger() RETURNS trigger LANGUAGE plpgsql AS \$\$
BEGIN
    PERFORM trap(1);
    RETURN NEW;
END \$\$;
CREATE TABLE hostile (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), v integer);
CREATE INDEX ON hostile ((trap(v)));
CREATE TRIGGER trap BEFORE INSERT OR UPDATE ON hostile FOR EACH ROW EXECUTE FUNCTION trap_trigger();
-- A planner folds the index predicates and statistics expressions of a table it plans for, so
-- these would run as whoever plans a query on it: one makes alice a superuser if that is one, the
-- other fails for anyone but her. The test itself never queries this table but as alice. They
-- name their schema: from 17 on, CREATE INDEX and ANALYZE run them with search_path pg_catalog.
CREATE FUNCTION promote() RETURNS void VOLATILE LANGUAGE plpgsql AS \$\$
BEGIN
    IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        EXECUTE 'ALTER ROLE alice SUPERUSER';
    END IF;
END \$\$;
CREATE FUNCTION promoting() RETURNS boolean IMMUTABLE LANGUAGE plpgsql AS \$\$
BEGIN
    PERFORM "Odd Schema".promote();
    RETURN true;
END \$\$;
CREATE FUNCTION alice_only() RETURNS integer IMMUTABLE LANGUAGE plpgsql AS \$\$
BEGIN
    RETURN "Odd Schema".trap(1);
END \$\$;
CREATE TABLE folded (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), v integer);
CREATE INDEX ON folded (id) WHERE promoting();
CREATE STATISTICS folded_trap ON (v + alice_only()), v FROM folded;

-- A partition detached from its table keeps its keys and loses its parent's default.
CREATE TABLE parted (id bigint PRIMARY KEY DEFAULT snowflake_nextval()) PARTITION BY RANGE (id);
CREATE TABLE detached PARTITION OF parted FOR VALUES FROM (0) TO (MAXVALUE);

CREATE DOMAIN outer_domain AS key_domain;
CREATE TABLE "domain of a domain" (id outer_domain);

CREATE TABLE others (id bigint PRIMARY KEY DEFAULT snowflake_nextval());

-- Keyed by the snowflake type: a default that calls snowflake_nextval() inside the assignment
-- cast, a partitioned table whose partitions take the parent's, a domain's default, and a column
-- with no default but an index (of bigint's operator family, the type's default).
CREATE TABLE typed (id snowflake PRIMARY KEY DEFAULT snowflake_nextval(), note text);
CREATE TABLE typed_events (id snowflake NOT NULL DEFAULT snowflake_nextval(), note text)
    PARTITION BY RANGE (id);
CREATE TABLE typed_events_early PARTITION OF typed_events FOR VALUES FROM (0) TO ($late_bound);
CREATE TABLE typed_events_late PARTITION OF typed_events
    FOR VALUES FROM ($late_bound) TO (MAXVALUE);
CREATE DOMAIN typed_domain AS snowflake DEFAULT snowflake_nextval();
CREATE TABLE "typed domain keyed" (id typed_domain PRIMARY KEY);
CREATE TABLE typed_indexed (id snowflake, note text);
CREATE INDEX typed_indexed_id ON typed_indexed (id);
));

# Ordinary keys in every table, issued by the generator.
$node->safe_psql('postgres', q(
SET ROLE alice;
SET search_path = "Odd Schema", public;
SET app.tenant = 'a';
INSERT INTO "tenant rows" SELECT FROM generate_series(1, 1000);
INSERT INTO events (note) SELECT 'early' FROM generate_series(1, 1000);
INSERT INTO base SELECT FROM generate_series(1, 1000);
INSERT INTO child SELECT snowflake_nextval() FROM generate_series(1, 1000);
INSERT INTO "domain keyed" (x) SELECT 1 FROM generate_series(1, 1000);
INSERT INTO revoked SELECT FROM generate_series(1, 1000);
INSERT INTO hostile (v) SELECT 1 FROM generate_series(1, 1000);
INSERT INTO folded (v) SELECT 1 FROM generate_series(1, 1000);
INSERT INTO typed (note) SELECT 'issued' FROM generate_series(1, 1000);
INSERT INTO typed_events (note) SELECT 'issued' FROM generate_series(1, 1000);
INSERT INTO "typed domain keyed" SELECT FROM generate_series(1, 1000);
INSERT INTO typed_indexed SELECT snowflake_nextval(), 'issued' FROM generate_series(1, 1000);
));

# Keys of this server's pair written by hand ahead of the clock, one layout each: each must hold
# generation back in turn. Tenant b's row is hidden from alice by her own policy.
my @layouts = (
    [qw(typed_indexed typed_indexed 613)],
    ['typed domain keyed', '"Odd Schema"."typed domain keyed"', 612],
    [qw(typed_events_late typed_events 611)],
    [qw(typed typed 610)],
    ['domain of a domain', '"Odd Schema"."domain of a domain"', 609],
    [qw(detached parted 608)],
    [qw(hostile hostile 607)],
    [qw(revoked revoked 606)],
    ['domain keyed', '"Odd Schema"."domain keyed"', 605],
    [qw(child child 604)],
    [qw(events_late_1 events 603)],
    [qw(events_late_0 events 602)],
    ['events early', 'events', 601],
    ['tenant rows', '"Odd Schema"."tenant rows"', 600],
);
my %key_of;
for my $layout (@layouts) {
    my ($table, $insert_into, $seconds) = @$layout;
    # The sub-partitions are fed by hash: a key of the right remainder is chosen for each.
    my $remainder = $table =~ /_([01])$/ ? $1 : undef;
    my $key = $node->safe_psql('postgres', qq(
SET search_path = "Odd Schema", public;
SELECT k FROM generate_series(0, 63) AS s,
    LATERAL (SELECT snowflake_encode('$base'::timestamptz + interval '$seconds seconds', 3, 4, s)
             AS k) AS e
WHERE @{[defined $remainder
    ? "satisfies_hash_partition('events_late'::regclass, 2, $remainder, k)" : 'true']}
LIMIT 1));
    $key_of{$table} = $key;
}
$node->safe_psql('postgres', qq(
SET ROLE alice;
SET search_path = "Odd Schema", public;
SET app.tenant = 'b';
INSERT INTO "tenant rows" VALUES ($key_of{'tenant rows'});
INSERT INTO events VALUES ($key_of{'events early'}, 'by hand'), ($key_of{events_late_0}, 'by hand'),
    ($key_of{events_late_1}, 'by hand');
INSERT INTO child VALUES ($key_of{child});
INSERT INTO "domain keyed" VALUES ($key_of{'domain keyed'}, 2);
INSERT INTO revoked VALUES ($key_of{revoked});
INSERT INTO hostile VALUES ($key_of{hostile}, 1);
INSERT INTO parted VALUES ($key_of{detached});
ALTER TABLE parted DETACH PARTITION detached;
INSERT INTO "domain of a domain" VALUES ($key_of{'domain of a domain'});
INSERT INTO typed VALUES ($key_of{typed}, 'by hand');
INSERT INTO typed_events VALUES ($key_of{typed_events_late}, 'by hand');
INSERT INTO "typed domain keyed" VALUES ($key_of{'typed domain keyed'});
INSERT INTO typed_indexed VALUES ($key_of{typed_indexed}, 'by hand');
-- Another pair's keys, ahead of the clock and far ahead: they can never equal this server's ids.
INSERT INTO others VALUES (snowflake_encode(now() + interval '5 minutes', 9, 9, 0)),
    (snowflake_encode(now() + interval '30 days', 9, 9, 0));
RESET ROLE;
REVOKE ALL ON "Odd Schema".revoked FROM alice;
));
is($node->safe_psql('postgres',
        q(SET ROLE alice; SET app.tenant = 'a'; SELECT count(*) FROM "Odd Schema"."tenant rows")),
    '1000', "alice's own policy hides tenant b's key from her");
like(error_of($node, q(SET ROLE alice; SELECT count(*) FROM "Odd Schema"."tenant rows")),
    qr/unrecognized configuration parameter "app.tenant"/,
    'her policy fails a read without app.tenant');

# Restarts without the mark file the first time; each later start rereads the keys, since the
# key that held generation back kept the floor armed.
sub restart {
    my ($remove_mark) = @_;
    return restart_reading_keys($node, $clock_file, $remove_mark);
}

# Restarts to read the keys while alice holds $table locked, waits until the read waits for it,
# then has her run $move (ending with COMMIT) in the same transaction; returns the error of the
# first call after the read has ended. The server's clock stands while the read waits, so that
# the read's second for the lock cannot run out before the move, however slow the machine.
sub error_after_move_during_read {
    my ($table, $move, $what) = @_;
    set_and_reload($node, 'snowflake.key_floor_max_lead', '1min');
    restart_keys_unread($node, $clock_file);
    my $mover = $node->background_psql('postgres');
    $mover->query_safe(qq(SET ROLE alice; BEGIN; LOCK TABLE $table IN ACCESS EXCLUSIVE MODE));
    freeze_clock($clock_file, int(Time::HiRes::time() * 1000));
    read_keys_now($node, 3);
    my $waiting_call = start_statement($node, 'postgres',
        "SET statement_timeout = '5s'; SELECT snowflake_nextval()");
    my $reader_waits = q(
SELECT count(*) > 0 FROM pg_stat_activity
WHERE backend_type = 'snowflake keys reader' AND datname = 'postgres'
  AND wait_event_type = 'Extension');
    ok($node->poll_query_until('postgres', $reader_waits), $what);
    $mover->query_safe($move);
    $mover->quit;
    # The clock runs again once the read no longer waits for the lock, which it now has.
    $node->poll_query_until('postgres', $reader_waits, 'f')
      or die 'the read still waits for the lock after the move';
    set_clock_offset($clock_file, '+0');
    eval { finish_statement($waiting_call) };
    my $error;
    for (1 .. 100) {
        $error = error_of($node, 'SELECT snowflake_nextval()');
        last if $error !~ /the read failed|57014/;
        sleep 1;
    }
    return $error;
}

# The scans of the indexes on the snowflake columns, which the first read after the start
# walks rather than reading their tables whole.
sub typed_index_scans {
    return $node->safe_psql('postgres', q(
SELECT sum(idx_scan) FROM pg_stat_user_indexes
WHERE indexrelid IN ('"Odd Schema".typed_pkey'::regclass, '"Odd Schema".typed_indexed_id'::regclass)));
}
my $typed_scans_before = typed_index_scans();

my $offset = restart(1);
for my $layout (@layouts) {
    my ($table) = @$layout;
    my $key = $key_of{$table};
    my $error = error_of($node, 'SELECT snowflake_nextval()');
    like($error, qr/ERROR:  55000: a stored key holds Snowflake id generation back until/,
        "a key in $table holds generation back, and the message says a stored key does");
    like($error,
        qr/DETAIL:  .*key $key of column id of table "Odd Schema"\."?\Q$table\E"? \(owner alice\) in database "postgres" is \d+ ms ahead of the clock/,
        "the message names the key and its table, $table");
    like($error, qr/HINT:  Generation resumes by itself at /,
        'the hint says that generation resumes by itself');
    if ($table eq 'typed_indexed') {
        # typed and typed_indexed, each in and beyond the window.
        cmp_ok(typed_index_scans() - $typed_scans_before, '>=', 4,
            "the read walked the snowflake type's indexes");
    }
    # The way back: the row goes, the server restarts.
    $node->safe_psql('postgres',
        qq(DELETE FROM "Odd Schema"."$table" WHERE id = $key));
    restart(0);
}
like($node->safe_psql('postgres', 'SELECT snowflake_nextval()'), qr/^\d+$/,
    'with the rows gone, generation resumes: the other pair holds nothing back');
ok(!$node->log_contains(qr/trap ran as/, $offset),
    "no read ran alice's index expression or trigger");
ok(!$node->log_contains(qr/ERROR:  permission denied/, $offset),
    'the revoked privileges failed no read');

# The duplicates of the review: the clock behind keys that a policy hides from their owner. The
# keys are issued with the clock 8 s ahead, and the server restarts with its clock standing at the
# time they were issued, 8 s behind them, however long the restart takes: the read runs in a
# background worker, whose clock libfaketime does not move on every version. Then the clock runs
# from now, and passes them within the 8 s.
set_and_reload($node, 'snowflake.key_floor_max_lead', '1min');
set_clock_offset($clock_file, '+8');
$node->safe_psql('postgres', q(
SET ROLE alice; SET app.tenant = 'c';
INSERT INTO "Odd Schema"."tenant rows" SELECT FROM generate_series(1, 5000)));
my $old_max = $node->safe_psql('postgres', 'SELECT max(id) FROM "Odd Schema"."tenant rows"');
freeze_clock($clock_file, unix_ms_of($old_max) - 8000);
restart(1);
like(error_of($node, q(SET ROLE alice; SET app.tenant = 'a';
INSERT INTO "Odd Schema"."tenant rows" SELECT FROM generate_series(1, 100))),
    qr/55000: a stored key holds Snowflake id generation back.*\n.*key $old_max of column id of table "Odd Schema"\."tenant rows" \(owner alice\)/,
    "tenant c's keys, hidden from the inserting tenant, hold generation back");
set_clock_offset($clock_file, '+0');
ok($node->poll_query_until('postgres', 'SELECT snowflake_nextval() > 0'),
    'generation resumes by itself once the clock passes the keys');
$node->safe_psql('postgres', q(
SET ROLE alice; SET app.tenant = 'a';
INSERT INTO "Odd Schema"."tenant rows" SELECT FROM generate_series(1, 5000)));
is($node->safe_psql('postgres', qq(
SELECT count(*) FROM "Odd Schema"."tenant rows" WHERE tenant = 'a' AND id > $old_max)),
    '5000', 'once the clock passes them, every new id is above the hidden keys');
is($node->safe_psql('postgres',
        'SELECT count(*) - count(DISTINCT id) FROM "Odd Schema"."tenant rows"'),
    '0', 'no id was issued twice');

# The same with keys of a snowflake column: the first new id is above them.
set_clock_offset($clock_file, '+8');
$node->safe_psql('postgres', q(
SET ROLE alice; INSERT INTO "Odd Schema".typed (note) SELECT 'before' FROM generate_series(1, 5000)));
my $typed_max = $node->safe_psql('postgres', 'SELECT max(id) FROM "Odd Schema".typed');
freeze_clock($clock_file, unix_ms_of($typed_max) - 8000);
restart(1);
like(error_of($node, q(SET ROLE alice;
INSERT INTO "Odd Schema".typed (note) SELECT 'after' FROM generate_series(1, 100))),
    qr/55000: a stored key holds Snowflake id generation back.*\n.*key $typed_max of column id of table "Odd Schema"\.typed \(owner alice\)/,
    'the keys of a snowflake column hold generation back');
set_clock_offset($clock_file, '+0');
ok($node->poll_query_until('postgres', 'SELECT snowflake_nextval() > 0'),
    'generation resumes by itself once the clock passes them');
$node->safe_psql('postgres', q(
SET ROLE alice; INSERT INTO "Odd Schema".typed (note) SELECT 'after' FROM generate_series(1, 5000)));
is($node->safe_psql('postgres', qq(
SELECT min(id) > $typed_max, count(*) FROM "Odd Schema".typed WHERE note = 'after')),
    't|5000', 'once the clock passes them, every new id is above them');

# Tables that their owner keeps locked stop generation until the locks are gone: the read of
# their database waits a second for them in all, then fails, names the first, and is tried again
# every 5 s; an index kept locked is read around (the table is read whole). Callers whose
# statement_timeout ends first do not restart the read. So that the calls wait whatever the
# machine's speed, the postmaster is stopped (SIGSTOP) while they run: the reader they ask for
# cannot start, and only their own statement_timeout ends them.
set_and_reload($node, 'snowflake.key_floor_max_lead', '3s');
$offset = restart_keys_unread($node, $clock_file);
my $locker = $node->background_psql('postgres');
$locker->query_safe(q(SET ROLE alice; BEGIN;
LOCK TABLE "Odd Schema".hostile, "Odd Schema".base, "Odd Schema".others IN ACCESS EXCLUSIVE MODE;
REINDEX INDEX "Odd Schema"."tenant rows_pkey"));
read_keys_now($node, 3);
my $caller = $node->background_psql('postgres', on_error_stop => 0);
$caller->query_safe(qq(\\set VERBOSITY verbose\nSET statement_timeout = '200ms'));
my ($postmaster_pid) = split /\n/, slurp_file($node->data_dir . '/postmaster.pid');
kill 'STOP', $postmaster_pid;
for my $call (1 .. 3) {
    $caller->query('SELECT snowflake_nextval()');
    like($caller->{stderr}, qr/57014: canceling statement due to statement timeout/,
        "call $call, waiting for the read, ends at its statement_timeout");
}
kill 'CONT', $postmaster_pid;
$caller->quit;
my $locked = error_of($node, 'SELECT snowflake_nextval()');
like($locked,
    qr/ERROR:  55000: Snowflake id generation waits for the stored keys of this server.s node pair to be read, and the read failed\nDETAIL:  reading database "postgres": table "Odd Schema"\.(hostile|base|others) is locked by another session\./,
    'tables kept locked stop generation, naming the first');
like($locked, qr/HINT:  .*retried every 5 s/, 'and the read is retried');
$locker->query_safe('COMMIT');
$locker->quit;
ok($node->poll_query_until('postgres', 'SELECT snowflake_nextval() > 0'),
    'generation resumes once the locks are gone and the window has passed');
my @locked_reads = slurp_file($node->logfile, $offset) =~ /the stored keys of [1-9]\d* databases were read/g;
is(scalar @locked_reads, 1, 'one read, which the timed-out calls did not restart');

# A reader ended while it holds a database's lock (here while its database's reader waits for
# a locked table) leaves no lock behind, which would keep an ALTER or DROP DATABASE waiting.
restart_keys_unread($node, $clock_file);
$locker = $node->background_psql('postgres');
$locker->query_safe(q(SET ROLE alice; BEGIN;
LOCK TABLE "Odd Schema".hostile IN ACCESS EXCLUSIVE MODE));
read_keys_now($node, 3);
# The call that starts the read waits until the database's reader is there, then is cancelled,
# so that no call is left to start another reader once this one is ended.
my $starter = start_statement($node, 'postgres', 'SELECT snowflake_nextval()');
$node->poll_query_until('postgres', q(SELECT count(*) = 1 FROM pg_stat_activity
    WHERE backend_type = 'snowflake keys reader' AND datname = 'postgres'))
  or die 'no reader of database postgres started';
$node->safe_psql('postgres', q(SELECT pg_cancel_backend(pid) FROM pg_stat_activity
    WHERE backend_type = 'client backend' AND query LIKE 'SELECT snowflake_nextval()%'
      AND pid <> pg_backend_pid()));
ok(!defined eval { finish_statement($starter) }, 'the call that started the read is cancelled');
$node->safe_psql('postgres', q(SELECT pg_terminate_backend(pid) FROM pg_stat_activity
    WHERE backend_type = 'snowflake keys reader' AND datname IS NULL));
$node->poll_query_until('postgres', q(SELECT count(*) = 0 FROM pg_stat_activity
    WHERE backend_type = 'snowflake keys reader'))
  or die 'the readers did not end';
is($node->safe_psql('postgres', q(SELECT count(*) FROM pg_locks
    WHERE locktype = 'object' AND classid = 'pg_database'::regclass
      AND pid NOT IN (SELECT pid FROM pg_stat_activity))), '0',
    'a reader ended in the middle of a database leaves no lock behind');
$locker->query_safe('COMMIT');
$locker->quit;
ok($node->poll_query_until('postgres', 'SELECT snowflake_nextval() > 0'),
    'and the reader started after it reads every database');

# A row that an UPDATE moves, while the database is read, from a table not yet read into one
# already read is seen where it was: the read of a database sees every table as it began. The
# read is held at the second partition by a lock that the moving session takes and keeps until it
# commits; the key, two days ahead, stops generation.
$node->safe_psql('postgres', q(SET ROLE alice;
CREATE TABLE "Odd Schema".moved (id bigint NOT NULL DEFAULT snowflake_nextval(), part integer)
    PARTITION BY LIST (part);
CREATE TABLE "Odd Schema".moved_1 PARTITION OF "Odd Schema".moved FOR VALUES IN (1);
CREATE TABLE "Odd Schema".moved_2 PARTITION OF "Odd Schema".moved FOR VALUES IN (2)));
my $moved_key = $node->safe_psql('postgres', q(SET ROLE alice;
INSERT INTO "Odd Schema".moved VALUES (snowflake_encode(now() + interval '2 days', 3, 4, 0), 2)
RETURNING id));
my $moved_error = error_after_move_during_read('"Odd Schema".moved_2',
    qq(UPDATE "Odd Schema".moved SET part = 1 WHERE id = $moved_key; COMMIT),
    'the read waits for the second partition');
like($moved_error,
    qr/DETAIL:  .*the highest is key $moved_key of column id of table "Odd Schema"\.moved_[12] \(owner alice\)/,
    'the key moved between the partitions during the read stops generation');
$node->safe_psql('postgres', qq(DELETE FROM "Odd Schema".moved WHERE id = $moved_key));

# The same move by a copy and a TRUNCATE, which leaves no row version behind: the read of the
# database begins again once it finds the truncated table changed since it was listed.
$node->safe_psql('postgres', q(SET ROLE alice;
INSERT INTO "Odd Schema".moved VALUES (snowflake_encode(now() + interval '2 days', 3, 4, 1), 2)));
$moved_key = $node->safe_psql('postgres', q(SELECT max(id) FROM "Odd Schema".moved));
$moved_error = error_after_move_during_read('"Odd Schema".moved_2',
    q(INSERT INTO "Odd Schema".moved SELECT id, 1 FROM "Odd Schema".moved_2;
TRUNCATE "Odd Schema".moved_2; COMMIT),
    'the read waits for the second partition again');
like($moved_error,
    qr/DETAIL:  .*the highest is key $moved_key of column id of table "Odd Schema"\.moved_1 \(owner alice\)/,
    'the key copied out of a partition truncated during the read stops generation');
$node->safe_psql('postgres', qq(DELETE FROM "Odd Schema".moved WHERE id = $moved_key));
restart(0);

# The same move by a copy into a new column, which is no key column, and a drop of the old one,
# which rewrites nothing: the read begins again once it finds the listed column dropped, and reads
# every column of that table.
$node->safe_psql('postgres', q(SET ROLE alice;
CREATE TABLE "Odd Schema".renamed_column (old_id bigint PRIMARY KEY);
INSERT INTO "Odd Schema".renamed_column
    VALUES (snowflake_encode(now() + interval '2 days', 3, 4, 2))));
$moved_key = $node->safe_psql('postgres', q(SELECT old_id FROM "Odd Schema".renamed_column));
$moved_error = error_after_move_during_read('"Odd Schema".renamed_column',
    q(ALTER TABLE "Odd Schema".renamed_column ADD COLUMN new_id bigint;
UPDATE "Odd Schema".renamed_column SET new_id = old_id;
ALTER TABLE "Odd Schema".renamed_column DROP COLUMN old_id; COMMIT),
    'the read waits for the table whose column moves');
like($moved_error,
    qr/DETAIL:  .*the highest is key $moved_key of column new_id of table "Odd Schema"\.renamed_column \(owner alice\)/,
    'the key copied out of a column dropped during the read stops generation');
$node->safe_psql('postgres', q(DROP TABLE "Odd Schema".renamed_column));
restart(0);

# A key of a transaction still in progress counts: it may yet be committed.
set_and_reload($node, 'snowflake.key_floor_max_lead', '1min');
restart_keys_unread($node, $clock_file);
my $pending_key = $node->safe_psql('postgres',
    q(SELECT snowflake_encode(now() + interval '40 seconds', 3, 4, 7)));
my $writer = $node->background_psql('postgres');
$writer->query_safe(qq(SET ROLE alice; BEGIN;
INSERT INTO "Odd Schema".others VALUES ($pending_key)));
read_keys_now($node, 3);
like(error_of($node, 'SELECT snowflake_nextval()'),
    qr/DETAIL:  .*key $pending_key of column id of table "Odd Schema"\.others/,
    'a key inserted by a transaction in progress holds generation back');
$writer->query_safe('ROLLBACK');
$writer->quit;
restart(0);
like($node->safe_psql('postgres', 'SELECT snowflake_nextval()'), qr/^\d+$/,
    'rolled back and restarted, it holds nothing');

# More tables than the lock table could hold at once: each is locked only while it is read.
$node->safe_psql('postgres',
    join("\n", map { qq(CREATE TABLE "Odd Schema".many_$_ (id bigint PRIMARY KEY);) } 1 .. 800));
$offset = restart(1);
like($node->safe_psql('postgres', 'SELECT snowflake_nextval()'), qr/^\d+$/,
    'eight hundred tables are read with max_locks_per_transaction = 10');
ok(!$node->log_contains(qr/out of shared memory/, $offset), 'without running out of locks');
is($node->safe_psql('postgres', q(SELECT rolsuper FROM pg_roles WHERE rolname = 'alice')), 'f',
    'no read ran the index predicate that would make alice a superuser');

# A table created by a prepared transaction is in no catalog a read can see: the read of its
# database fails, naming the prepared transactions, until they are gone; then none of their keys
# is issued again.
set_and_reload($node, 'snowflake.key_floor_max_lead', '1min');
$node->safe_psql('postgres', q(SET ROLE alice; BEGIN;
CREATE TABLE "Odd Schema".unseen (id bigint PRIMARY KEY DEFAULT snowflake_nextval());
INSERT INTO "Odd Schema".unseen
    SELECT snowflake_encode(now() + interval '20 s', 3, 4, s) FROM generate_series(0, 4095) AS s;
PREPARE TRANSACTION 'unseen'));
restart(1);
like(error_of($node, 'SELECT snowflake_nextval()'),
    qr/ERROR:  55000: .*the read failed\nDETAIL:  reading database "postgres": database "postgres" has 1 prepared transactions, whose new tables the read of keys cannot see\./,
    'a prepared transaction stops generation, named');
$node->safe_psql('postgres', "COMMIT PREPARED 'unseen'");
my $unseen_error;
for (1 .. 100) {
    $unseen_error = error_of($node, 'SELECT snowflake_nextval()');
    last if $unseen_error !~ /the read failed/;
    sleep 1;
}
like($unseen_error, qr/DETAIL:  .*of column id of table "Odd Schema"\.unseen/,
    'once it is committed, the read finds its keys');
ok($node->poll_query_until('postgres', 'SELECT snowflake_nextval() > 0'),
    'generation resumes once the clock has passed them');
$node->safe_psql('postgres', q(SET ROLE alice;
INSERT INTO "Odd Schema".unseen SELECT FROM generate_series(1, 5000)));
is($node->safe_psql('postgres', 'SELECT count(*) FROM "Odd Schema".unseen'), '9096',
    'the ids issued since are none of the keys the prepared transaction stored');

done_testing();
