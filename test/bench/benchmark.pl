#!/usr/bin/env perl
# The benchmark suite, run through test/bench/run (which builds and installs first): servers come
# from PostgreSQL's own test modules, load from pgbench, and timed statements from psql's \timing in
# a background session. Every case runs its alternatives interleaved, BENCH_REPETITIONS times (5),
# and prints Markdown tables of medians; BENCH_CASES=1,2 runs only some cases. The cases: 1 bulk
# generation, 2 concurrent sessions, 3 inserts, 4 decoding, 5 a time range, 6 the core alone, 7
# several servers, 8 converting a serial table, 9 the planner hook, 10 the snowflake type against
# bigint (BENCH_TYPE_ROWS rows for its index, 10,000,000 unless set; a tenth of them for its sort
# and join), 11 partition maintenance (BENCH_PARTITION_ROWS rows, 10,000,000 unless set), 12 the
# first id after a start without the mark file (BENCH_FLOOR_ROWS rows, 24,000,000 unless set), 13
# the keys against PostgreSQL 18's uuidv7(), bigserial and gen_random_uuid(): bulk and single-row
# inserts, sizes and a time range (BENCH_UUID_ROWS rows, 2,000,000 unless set; without uuidv7()
# before 18), 14 what the settled bound costs, against a baseline build (BENCH_BASELINE), 15
# following changes against an updated_at trigger (BENCH_CHANGES_ROWS changes, 1,000,000 unless
# set). A backend's CPU time comes from /proc/PID/schedstat; that of pgbench's backends, which
# have exited by the time it is read, from the children's CPU time that the postmaster collects
# (/proc/PID/stat).
use strict;
use warnings;

# The report and the reason of a failure go to the real standard output and error, duplicated
# before PostgreSQL::Test::Utils sends both to its log file.
my ($report, $errors);
BEGIN {
    open $report, '>&', \*STDOUT or die "dup: $!";
    open $errors, '>&', \*STDERR or die "dup: $!";
}

use File::Spec;
use List::Util qw(max min sum);
use POSIX qw(ceil);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Time::HiRes qw(sleep time);

# The test modules note every statement they run; a benchmark's output is its tables.
Test::More->builder->output(File::Spec->devnull);

my $core_bench = shift @ARGV;
my $repetitions = $ENV{BENCH_REPETITIONS} // 5;
my %selected = map { $_ => 1 } split /,/, ($ENV{BENCH_CASES} // '1,2,3,4,5,6,7,8,9,10,11,12,13,14,15');
my $ceiling_ids_per_s = 4_096_000;
my $work_dir = PostgreSQL::Test::Utils::tempdir;
chomp(my $cores = `nproc`);

# What every benchmark server runs with: room for the data sets, no statement logging (the test
# modules log every statement), and commits that do not wait for the WAL flush, so that the key,
# not the disk, is what differs between the alternatives.
my $server_settings = <<'CONF';
shared_buffers = '1GB'
max_wal_size = '8GB'
synchronous_commit = off
autovacuum = off
log_statement = 'none'
max_connections = 120
CONF

sub say_out { print {$report} @_; }

sub median {
    my @sorted = sort { $a <=> $b } @_;
    my $middle = int(@sorted / 2);
    return @sorted % 2 ? $sorted[$middle] : ($sorted[ $middle - 1 ] + $sorted[$middle]) / 2;
}

sub fmt { return sprintf($_[0], $_[1]); }

sub table {
    my ($header, @rows) = @_;
    say_out('| ', join(' | ', @$header), " |\n", '|', join('|', map { '---' } @$header), "|\n");
    say_out('| ', join(' | ', @$_), " |\n") for @rows;
    say_out("\n");
}

# A started server with the extension created; preloaded, with its own machine id, unless
# preload is 0.
sub bench_server {
    my ($name, %options) = @_;
    my $node;
    if ($options{preload} // 1) {
        $node = snowflake_node($name, machine_id => $options{machine_id} // 1);
    }
    else {
        $node = PostgreSQL::Test::Cluster->new($name);
        $node->init;
    }
    $node->append_conf('postgresql.conf', $server_settings);
    $node->start;
    $node->safe_psql('postgres', 'CREATE EXTENSION snowflake');
    return $node;
}

# A psql session kept open with \timing on, and its backend's process id.
sub open_session {
    my ($node) = @_;
    my $session = $node->background_psql('postgres', timeout => 3600);
    $session->set_query_timer_restart;
    # A notice (DROP TABLE IF EXISTS) on standard error would count as a failed statement.
    $session->query_safe('SET client_min_messages = warning');
    $session->query_safe('\timing on');
    my ($rows) = timed($session, 'SELECT pg_backend_pid()');
    $session->{backend_pid} = $rows->[0];
    return $session;
}

# The rows (as psql prints them, fields separated by |) and milliseconds of one statement.
sub timed {
    my ($session, $sql) = @_;
    my @lines = split /\n/, $session->query_safe($sql);
    my @times = map { /^Time: ([\d.]+) ms/ ? $1 : () } @lines;
    die "no timing for: $sql\n" unless @times;
    return ([ grep { !/^Time: / } @lines ], sum(@times));
}

sub timed_ms { return (timed(@_))[1]; }

# Nanoseconds a backend has spent on a CPU.
sub backend_cpu_ns {
    my ($pid) = @_;
    open my $fh, '<', "/proc/$pid/schedstat" or die "schedstat of $pid: $!";
    my ($ns) = split ' ', scalar <$fh>;
    return $ns;
}

# The process ids of the backends of the load's clients (started with PGAPPNAME set to
# benchmark_load), once all of them are connected.
sub load_backends {
    my ($node, $clients, $pgbench) = @_;
    my $query = q(SELECT pid FROM pg_stat_activity WHERE application_name = 'benchmark_load'
        AND pid <> pg_backend_pid());
    for (my $tries = 0; ; $tries++) {
        last if $node->safe_psql('postgres', "SELECT count(*) FROM ($query) b") == $clients;
        die "pgbench's $clients clients did not connect\n" if $tries > 100 || !$pgbench->pumpable;
        sleep 0.1;
    }
    return split /\n/, $node->safe_psql('postgres', $query);
}

# Ids the server has issued since it started, and the CPU nanoseconds of some backends, read
# together.
sub issued_and_cpu_ns {
    my ($node, @pids) = @_;
    my $cpu_ns = sum(map { backend_cpu_ns($_) } @pids);
    my $issued = $node->safe_psql('postgres', 'SELECT ids_generated FROM snowflake_info()');
    return ($issued, $cpu_ns, time);
}

# Writes a pgbench script file and returns its path.
sub script {
    my ($name, $sql) = @_;
    my $path = "$work_dir/$name.sql";
    open my $fh, '>', $path or die $!;
    print {$fh} "$sql;\n";
    close $fh;
    return $path;
}

# The command line of pgbench against a server, with -n (no vacuum) and the given options.
sub pgbench_command {
    my ($node, @arguments) = @_;
    return [ 'pgbench', '-n', @arguments, '-h', $node->host, '-p', $node->port, 'postgres' ];
}

# The tps of a finished pgbench run, from its output.
sub tps_of {
    my ($stdout, $stderr) = @_;
    my ($tps) = $stdout =~ /tps = ([\d.]+) \(without initial connection time\)/;
    die "no tps in pgbench output:\n$stdout$stderr" unless defined $tps;
    return $tps;
}

sub pgbench_tps {
    my ($node, @arguments) = @_;
    return tps_of(run_command(pgbench_command($node, @arguments)));
}

# Transactions per client in the per-transaction logs that pgbench -l wrote under a prefix
# (a line starts with the client's number), and the third field (microseconds) of every line.
sub read_pgbench_logs {
    my ($prefix) = @_;
    my (%by_client, @latencies_us);
    for my $file (glob("$prefix.*")) {
        open my $fh, '<', $file or die $!;
        while (<$fh>) {
            my ($client, undef, $latency_us) = split ' ';
            $by_client{$client}++;
            push @latencies_us, $latency_us;
        }
        close $fh;
        unlink $file;
    }
    return (\%by_client, \@latencies_us);
}

sub percentile {
    my ($fraction, @values) = @_;
    my @sorted = sort { $a <=> $b } @values;
    return $sorted[ min($#sorted, int($fraction * @sorted)) ];
}

# Case 1: one statement making N ids, for snowflake and what users would write instead.
sub bulk_generation {
    my ($node) = @_;
    my $session = open_session($node);
    $session->query_safe(<<'SQL');
CREATE SEQUENCE bench_sequence;
CREATE SEQUENCE hand_sequence;
CREATE FUNCTION hand_snowflake() RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
    RETURN ((floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint - 1288834974657) << 22)
           | (1 << 12) | (nextval('hand_sequence') % 4096);
END $$
SQL
    my @alternatives = (
        [ 'snowflake_nextval()', 'snowflake_nextval()' ],
        [ "nextval('sequence')", "nextval('bench_sequence')" ],
        [ 'gen_random_uuid()', 'gen_random_uuid()' ],
        [ 'PL/pgSQL snowflake', 'hand_snowflake()' ],
    );
    my $statement = sub { "SELECT count($_[0]) FROM (SELECT generate_series(1, $_[1])) s" };
    # One untimed run of each first, so that no timed run pays for a cold start.
    $session->query_safe($statement->($_->[1], 100_000)) for @alternatives;
    my (@rows, %cpu_ms);
    for my $count (1_000_000, 10_000_000) {
        my %times;
        for my $run (1 .. $repetitions) {
            for my $alternative (@alternatives) {
                my ($name, $call) = @$alternative;
                my $cpu_before = backend_cpu_ns($session->{backend_pid});
                push @{ $times{$name} }, timed_ms($session, $statement->($call, $count));
                push @{ $cpu_ms{$count} },
                  (backend_cpu_ns($session->{backend_pid}) - $cpu_before) / 1e6
                  if $name eq 'snowflake_nextval()';
            }
        }
        my $snowflake = median(@{ $times{'snowflake_nextval()'} });
        my $ceiling_ms = $count / $ceiling_ids_per_s * 1000;
        for my $name (map { $_->[0] } @alternatives) {
            my $median = median(@{ $times{$name} });
            push @rows, [ $name, $count, fmt('%.1f', $median), fmt('%.1f', min(@{ $times{$name} })),
                fmt('%.1f', max(@{ $times{$name} })), fmt('%.2f M/s', $count / $median / 1000),
                fmt('%.2f', $snowflake / $median), fmt('%.3f', $median / $ceiling_ms) ];
        }
    }
    say_out("## 1. Bulk generation in one statement\n\n",
        "`SELECT count(f) FROM (SELECT generate_series(1, N)) s`, $repetitions runs each, ",
        "interleaved; ceiling = N / 4,096 ms.\n\n");
    table([ 'function', 'ids', 'median ms', 'min ms', 'max ms', 'rate', 'snowflake / this',
            'this / ceiling' ], @rows);

    my @fill_rows;
    for my $count (1_000_000, 10_000_000) {
        my ($full, $spanned) = split /\|/, (timed($session, <<"SQL"))[0][0];
SELECT count(*) FILTER (WHERE snowflake_sequence(id) = 4095),
       snowflake_unix_ms(max(id)) - snowflake_unix_ms(min(id)) + 1
FROM (SELECT snowflake_nextval() AS id FROM (SELECT generate_series(1, $count)) s) t
SQL
        push @fill_rows, [ $count, $spanned, ceil($count / 4096), $full,
            fmt('%.1f%%', 100 * $full / $spanned) ];
    }
    say_out("Milliseconds the ids of one statement span, and how many of them were used to the ",
        "full 4,096 (an id with sequence 4095 in it):\n\n");
    table([ 'ids', 'ms spanned', 'fewest possible', 'ms with all 4,096 used', 'full' ], @fill_rows);
    say_out("CPU time of the generating backend (median of the runs above):\n\n");
    table([ 'ids', 'backend CPU ms', 'CPU ms per million ids' ],
        map { [ $_, fmt('%.0f', median(@{ $cpu_ms{$_} })),
            fmt('%.0f', median(@{ $cpu_ms{$_} }) / ($_ / 1e6)) ] } 1_000_000, 10_000_000);
    $session->quit;
}

# Case 2: 1, 2, 4 and 8 sessions generating at once (throughput, the CPU the waiting costs, how
# evenly the sessions share the ceiling), then the latency of one call while 8 sessions saturate.
# Throughput and CPU are read over a window of $seconds in the middle of each run, when every
# session is connected and generating; the shares come from pgbench's per-transaction logs.
sub concurrency {
    my ($node) = @_;
    my $seconds = 3;
    my $chunk = 20_000;
    my $generate = script('generate',
        "SELECT count(snowflake_nextval()) FROM (SELECT generate_series(1, $chunk)) s");
    # What one row costs the executor on this machine today, for comparing runs: the same
    # streamed series through a function that does next to nothing.
    my $session = open_session($node);
    my $row_ms = median(map {
        timed_ms($session, 'SELECT count(snowflake_sequence(1)) FROM (SELECT generate_series(1, 1000000)) s')
    } 1 .. 3);
    $session->quit;
    my %runs;
    for my $run (1 .. $repetitions) {
        for my $sessions (1, 2, 4, 8) {
            my $load = IPC::Run::start([ 'env', 'PGAPPNAME=benchmark_load', @{ pgbench_command($node,
                '-c', $sessions, '-j', $sessions, '-T', $seconds + 2, '-f', $generate, '-l',
                "--log-prefix=$work_dir/generate_log") } ], '>', \my $load_out, '2>', \my $load_err);
            my @backends = eval { load_backends($node, $sessions, $load) } or do {
                $load->finish;
                die "$@$load_out$load_err";
            };
            sleep 0.5;
            my ($issued_before, $cpu_before, $started) = issued_and_cpu_ns($node, @backends);
            sleep $seconds;
            my ($issued_after, $cpu_after, $ended) = issued_and_cpu_ns($node, @backends);
            $load->finish or die "pgbench failed:\n$load_out$load_err";
            my ($by_client) = read_pgbench_logs("$work_dir/generate_log");
            my $issued = $issued_after - $issued_before;
            push @{ $runs{$sessions} }, {
                ids_per_s => $issued / ($ended - $started),
                slowest_share => min(values %$by_client) / (sum(values %$by_client) / $sessions),
                cpu_per_million => ($cpu_after - $cpu_before) / 1e6 / ($issued / 1e6) };
        }
    }
    say_out("## 2. Concurrent sessions\n\n",
        "pgbench, one client per session, each running `SELECT count(snowflake_nextval()) FROM ",
        "(SELECT generate_series(1, $chunk)) s` back to back; ids and the CPU time of all the ",
        "sessions' backends are read over $seconds s while every session runs; $repetitions runs ",
        "of each session count, interleaved; medians. ",
        fmt('On this run the executor alone costs %.0f ns', $row_ms), " per row (the same ",
        "series through `snowflake_sequence(1)`), which bounds what one session can do.\n\n");
    my $column = sub { my ($sessions, $key) = @_; median(map { $_->{$key} } @{ $runs{$sessions} }) };
    table([ 'sessions', 'total ids/s', 'total / ceiling', 'slowest session / fair share',
            'backend CPU ms per million ids' ],
        map { [ $_, fmt('%.3f M/s', $column->($_, 'ids_per_s') / 1e6),
            fmt('%.3f', $column->($_, 'ids_per_s') / $ceiling_ids_per_s),
            fmt('%.2f', $column->($_, 'slowest_share')),
            fmt('%.0f', $column->($_, 'cpu_per_million')) ] } 1, 2, 4, 8);

    # One more client calls snowflake_nextval() 200 times a second while 8 sessions saturate.
    my $single = script('single', 'SELECT snowflake_nextval()');
    my (@p50, @p99, @worst);
    for my $run (1 .. $repetitions) {
        my $load = IPC::Run::start(pgbench_command($node, '-c', 8, '-j', 8, '-T', $seconds + 2,
            '-f', $generate), '>', \my $load_out, '2>', \my $load_err);
        sleep 1;
        run_command(pgbench_command($node, '-c', 1, '-R', 200, '-T', $seconds, '-f', $single, '-l',
            "--log-prefix=$work_dir/single_log"));
        $load->finish;
        my (undef, $latencies_us) = read_pgbench_logs("$work_dir/single_log");
        push @p50, percentile(0.5, @$latencies_us) / 1000;
        push @p99, percentile(0.99, @$latencies_us) / 1000;
        push @worst, max(@$latencies_us) / 1000;
    }
    say_out("Latency of a single `SELECT snowflake_nextval()` (pgbench -R 200, one client, ",
        "$seconds s, per-transaction log) while 8 sessions saturate the node as above; ",
        "$repetitions runs, medians of each run's figure:\n\n");
    table([ 'p50 ms', 'p99 ms', 'max ms' ],
        [ fmt('%.2f', median(@p50)), fmt('%.2f', median(@p99)), fmt('%.2f', median(@worst)) ]);
}

# Case 3: single-row inserts from 8 and 32 clients and 1,000-row batches into tables keyed three
# ways, and the size of their primary-key indexes.
sub inserts {
    my ($node) = @_;
    my @keys = (
        [ 'snowflake', 'id bigint PRIMARY KEY DEFAULT snowflake_nextval()' ],
        [ 'bigserial', 'id bigserial PRIMARY KEY' ],
        [ 'uuid', 'id uuid PRIMARY KEY DEFAULT gen_random_uuid()' ],
    );
    $node->safe_psql('postgres', join ';', map {
        "CREATE TABLE insert_$_->[0] ($_->[1], payload text NOT NULL);"
          . "CREATE TABLE sized_$_->[0] ($_->[1], payload text NOT NULL)"
    } @keys);
    my $seconds = 3;
    my @modes = (
        [ 'single row, 8 clients', 8, q(INSERT INTO insert_%s (payload) VALUES ('x')) ],
        [ 'single row, 32 clients', 32, q(INSERT INTO insert_%s (payload) VALUES ('x')) ],
        [ '1,000-row batch, 8 clients', 8,
          q(INSERT INTO insert_%s (payload) SELECT 'x' FROM generate_series(1, 1000)) ],
    );
    my (@rows, %tps);
    for my $mode (@modes) {
        my ($label, $clients, $template) = @$mode;
        for my $run (1 .. $repetitions) {
            for my $key (map { $_->[0] } @keys) {
                push @{ $tps{$label}{$key} }, pgbench_tps($node, '-c', $clients, '-j', 2, '-T',
                    $seconds, '-f', script('insert', sprintf($template, $key)));
            }
        }
        my $bigserial = median(@{ $tps{$label}{bigserial} });
        for my $key (map { $_->[0] } @keys) {
            my $median = median(@{ $tps{$label}{$key} });
            push @rows, [ $label, $key, fmt('%.0f', $median), fmt('%.3f', $median / $bigserial) ];
        }
    }
    say_out("## 3. Inserts\n\n",
        "pgbench (2 threads), $seconds s per run, $repetitions runs per table, interleaved; ",
        "`synchronous_commit = off` and `fsync = off`, so that the key, not the WAL flush, is ",
        "what differs.\n\n");
    table([ 'inserts', 'key', 'median tps', 'tps / bigserial tps' ], @rows);
    my @size_rows;
    for my $name (map { $_->[0] } @keys) {
        my $bytes = $node->safe_psql('postgres',
            "INSERT INTO sized_$name (payload) SELECT 'x' FROM generate_series(1, 1000000);"
              . "SELECT pg_relation_size('sized_${name}_pkey')");
        push @size_rows, [ $name, fmt('%.1f MB', $bytes / 1048576) ];
    }
    say_out("Primary-key index after 1,000,000 rows inserted in one statement:\n\n");
    table([ 'key', 'index size' ], @size_rows);
}

# Case 4: decoding 1,000,000 stored ids, against the same arithmetic in SQL.
sub decoding {
    my ($node) = @_;
    my $session = open_session($node);
    # One backend does all the work, so that the time per row is the cost per call.
    $session->query_safe('SET max_parallel_workers_per_gather = 0');
    $session->query_safe('CREATE TABLE stored_ids AS '
          . 'SELECT snowflake_nextval() AS id FROM generate_series(1, 1000000)');
    $session->query_safe('VACUUM ANALYZE stored_ids');
    my $epoch = 1288834974657;
    my @pairs = (
        [ 'snowflake_timestamp(id)', 'max(snowflake_timestamp(id))',
          "max(to_timestamp(((id >> 22) + $epoch)::float8 / 1000))" ],
        [ 'snowflake_unix_ms(id)', 'sum(snowflake_unix_ms(id))', "sum((id >> 22) + $epoch)" ],
        [ 'snowflake_datacenter_id(id)', 'sum(snowflake_datacenter_id(id))',
          'sum(((id >> 17) & 31)::integer)' ],
        [ 'snowflake_machine_id(id)', 'sum(snowflake_machine_id(id))',
          'sum(((id >> 12) & 31)::integer)' ],
        [ 'snowflake_sequence(id)', 'sum(snowflake_sequence(id))', 'sum((id & 4095)::integer)' ],
    );
    my @whole_rows = (
        [ 'five scalar accessors', 'SELECT max(snowflake_timestamp(id)), sum(snowflake_unix_ms(id)), '
            . 'sum(snowflake_datacenter_id(id)), sum(snowflake_machine_id(id)), '
            . 'sum(snowflake_sequence(id)) FROM stored_ids' ],
        [ '(snowflake_decode(id)).*', 'SELECT max(created_at), sum(unix_ms), sum(datacenter_id), '
            . 'sum(machine_id), sum(sequence) FROM (SELECT (snowflake_decode(id)).* FROM stored_ids) s' ],
        [ 'LATERAL snowflake_decode(id)', 'SELECT max(d.created_at), sum(d.unix_ms), '
            . 'sum(d.datacenter_id), sum(d.machine_id), sum(d.sequence) '
            . 'FROM stored_ids, LATERAL snowflake_decode(id) AS d' ],
        [ 'snowflake_decode(id) once, fields with (p).field', 'SELECT max((p).created_at), '
            . 'sum((p).unix_ms), sum((p).datacenter_id), sum((p).machine_id), sum((p).sequence) '
            . 'FROM (SELECT snowflake_decode(id) AS p FROM stored_ids OFFSET 0) s' ],
    );
    my $scan = 'SELECT count(id) FROM stored_ids';
    my %times;
    # Untimed passes first, so that every timed one finds the table in shared buffers.
    $session->query_safe($scan) for 1 .. 2;
    for my $run (1 .. $repetitions) {
        push @{ $times{scan} }, timed_ms($session, $scan);
        for my $pair (@pairs) {
            push @{ $times{"$pair->[0] c"} }, timed_ms($session, "SELECT $pair->[1] FROM stored_ids");
            push @{ $times{"$pair->[0] sql"} }, timed_ms($session, "SELECT $pair->[2] FROM stored_ids");
        }
        push @{ $times{ $_->[0] } }, timed_ms($session, $_->[1]) for @whole_rows;
    }
    $session->quit;
    my $scan_ms = median(@{ $times{scan} });
    my $per_row = sub { fmt('%.1f', ($_[0] - $scan_ms) * 1e6 / 1_000_000) };
    say_out("## 4. Decoding 1,000,000 stored ids\n\n",
        "Each function in an aggregate over the table, against the same arithmetic in SQL; ",
        "$repetitions runs, interleaved; ns per row exclude the scan (`count(id)`, ",
        fmt('%.1f', $scan_ms), " ms).\n\n");
    table([ 'function', 'median ms', 'SQL twin ms', 'ns/row', 'SQL twin ns/row', 'function / twin' ],
        map {
            my $c = median(@{ $times{"$_->[0] c"} });
            my $sql = median(@{ $times{"$_->[0] sql"} });
            [ $_->[0], fmt('%.1f', $c), fmt('%.1f', $sql), $per_row->($c), $per_row->($sql),
              fmt('%.3f', $c / $sql) ]
        } @pairs);
    table([ 'all five fields', 'median ms', 'ns/row' ], map {
        my $ms = median(@{ $times{ $_->[0] } });
        [ $_->[0], fmt('%.1f', $ms), $per_row->($ms) ]
    } @whole_rows);
    say_out("`(snowflake_decode(id)).*` calls the function once per column (PostgreSQL expands ",
        "it); `LATERAL` calls it once per row but materialises each result; selecting the row ",
        "once in a subquery and its fields with `(p).field` calls it once per row without that.\n\n");
}

# Case 5: one hour out of 10,000,000 rows, by id range and by the natural predicate on the
# decoded timestamp, with the planner rewrite on and off.
sub time_range {
    my ($node) = @_;
    my $start_ms = 1764547200000;    # 2025-12-01 00:00:00 UTC
    $node->safe_psql('postgres', <<"SQL");
CREATE TABLE events (id bigint PRIMARY KEY, payload integer NOT NULL);
INSERT INTO events
SELECT snowflake_encode($start_ms + n * 86, 1, 1, 0), n FROM generate_series(0, 9999999) AS n;
VACUUM ANALYZE events
SQL
    my $from = "'2025-12-05 10:00:00+00'";
    my $to = "'2025-12-05 11:00:00+00'";
    my $natural = 'SELECT count(*), sum(payload) FROM events WHERE '
      . "snowflake_timestamp(id) >= $from AND snowflake_timestamp(id) < $to";
    my @queries = (
        [ 'id range with snowflake_min_id()', '', 'SELECT count(*), sum(payload) FROM events '
            . "WHERE id >= snowflake_min_id($from) AND id < snowflake_min_id($to)" ],
        [ 'snowflake_timestamp(id), time_predicates on', 'SET snowflake.time_predicates = on', $natural ],
        [ 'snowflake_timestamp(id), time_predicates off', 'SET snowflake.time_predicates = off', $natural ],
    );
    my $session = open_session($node);
    my %times;
    for my $run (1 .. $repetitions) {
        for my $query (@queries) {
            $session->query_safe($query->[1]) if $query->[1];
            push @{ $times{ $query->[0] } }, timed_ms($session, $query->[2]);
        }
    }
    my ($rows) = split /\|/, (timed($session, $queries[0][2]))[0][0];
    say_out("## 5. One hour out of 10,000,000 rows\n\n",
        "`events` holds 10,000,000 ids 86 ms apart (about 11.5 days); the hour holds $rows rows; ",
        "$repetitions runs, interleaved.\n\n");
    table([ 'predicate', 'median ms' ],
        map { [ $_->[0], fmt('%.2f', median(@{ $times{ $_->[0] } })) ] } @queries);
    for my $query (@queries) {
        $session->query_safe($query->[1]) if $query->[1];
        my ($plan) = timed($session, "EXPLAIN (COSTS OFF) $query->[2]");
        say_out("Plan for $query->[0]:\n\n```\n", map({ "$_\n" } @$plan), "```\n\n");
    }
    $session->quit;
}

# Case 6: the core alone, through Google Benchmark.
sub core {
    my ($stdout, $stderr) = run_command([ $core_bench, '--benchmark_min_time=0.2' ]);
    # run_command strips the last newline of each stream.
    say_out("## 6. The core alone (Google Benchmark)\n\n```\n$stderr\n$stdout\n```\n\n");
}

# Case 7: one session on each of 1, 2 and 3 servers with distinct node ids, all at once: ids per
# second against N x 4,096,000.
sub servers {
    my ($node) = @_;
    my $seconds = 3;
    my $chunk = 20_000;
    my @nodes = ($node, map { bench_server("machine$_", machine_id => $_) } 2, 3);
    my $generate = script('generate',
        "SELECT count(snowflake_nextval()) FROM (SELECT generate_series(1, $chunk)) s");
    my %totals;
    for my $run (1 .. $repetitions) {
        for my $count (1, 2, 3) {
            my @runs = map {
                my %output;
                { output => \%output, harness => IPC::Run::start(
                    pgbench_command($_, '-T', $seconds, '-f', $generate),
                    '>', \$output{stdout}, '2>', \$output{stderr}) }
            } @nodes[ 0 .. $count - 1 ];
            $_->{harness}->finish for @runs;
            push @{ $totals{$count} },
              sum(map { tps_of($_->{output}{stdout}, $_->{output}{stderr}) * $chunk } @runs);
        }
    }
    $_->stop for @nodes[ 1, 2 ];
    say_out("## 7. Several servers at once\n\n",
        "One pgbench client per server, each server on its own node id, generating back to back ",
        "for $seconds s; $repetitions runs each, interleaved; medians. The machine has $cores ",
        "cores: with more servers than cores the total is bound by CPU as well as by the ",
        "layout.\n\n");
    table([ 'servers', 'total ids/s', 'N x 4,096,000', 'total / (N x ceiling)' ], map {
        my $total = median(@{ $totals{$_} });
        [ $_, fmt('%.3f M/s', $total / 1e6), fmt('%.3f M/s', $_ * 4.096),
          fmt('%.3f', $total / ($_ * $ceiling_ids_per_s)) ]
    } 1, 2, 3);
}

# The tables of case 8, made anew: a serial key and two tables that reference it.
sub fill_order_tables {
    my ($session) = @_;
    $session->query_safe($_) for (
        'DROP TABLE IF EXISTS invoices, order_lines, orders',
        'CREATE TABLE orders (id serial PRIMARY KEY, note text NOT NULL)',
        'CREATE TABLE order_lines (id bigserial PRIMARY KEY, '
          . 'order_id integer NOT NULL REFERENCES orders (id), quantity integer NOT NULL)',
        'CREATE TABLE invoices (id bigserial PRIMARY KEY, '
          . 'order_id bigint NOT NULL REFERENCES orders (id))',
        q(INSERT INTO orders (note) SELECT 'order ' || g FROM generate_series(1, 1000000) g),
        'INSERT INTO order_lines (order_id, quantity) SELECT id, 1 FROM orders',
        'INSERT INTO invoices (order_id) SELECT id FROM orders WHERE id % 2 = 0',
        'VACUUM ANALYZE orders, order_lines, invoices',
        'CHECKPOINT');
}

# Case 8: snowflake_convert_column() on a 1,000,000-row serial table referenced by 1,000,000
# integer and 500,000 bigint foreign keys, against the ALTER TABLE statements a user would write
# for the same widening; then pg_dump and pg_restore of the converted tables into a new database.
sub conversion {
    my ($node) = @_;
    my $session = open_session($node);
    my $fingerprint = join ' || \' \' || ',
      map { "(SELECT count(*) || ' ' || md5(string_agg($_->[1], ',' ORDER BY id)) FROM $_->[0])" }
      [ 'orders', 'id::text' ], [ 'order_lines', q(id || ':' || order_id) ],
      [ 'invoices', q(id || ':' || order_id) ];
    my @ways = (
        [ 'snowflake_convert_column()', q(SELECT count(*) FROM snowflake_convert_column('orders', 'id')) ],
        # One statement, so that psql's \timing covers both.
        [ 'ALTER TABLE (widening only)', 'DO $$BEGIN ALTER TABLE orders ALTER COLUMN id TYPE bigint; '
            . 'ALTER TABLE order_lines ALTER COLUMN order_id TYPE bigint; END$$' ],
    );
    my $runs = min($repetitions, 3);
    my %ms;
    for my $run (1 .. $runs) {
        for my $way (@ways) {
            fill_order_tables($session);
            push @{ $ms{ $way->[0] } }, timed_ms($session, $way->[1]);
        }
    }
    # The tables of one more conversion, dumped and restored.
    fill_order_tables($session);
    my ($before) = @{ (timed($session, "SELECT $fingerprint"))[0] };
    my $convert_ms = timed_ms($session, $ways[0][1]);
    my ($after) = @{ (timed($session, "SELECT $fingerprint"))[0] };
    my $dump_file = "$work_dir/converted.dump";
    my $started = time;
    system_or_bail('pg_dump', '-Fc', '-t', 'orders', '-t', 'order_lines', '-t', 'invoices', '-f',
        $dump_file, '-d', $node->connstr('postgres'));
    my $dump_s = time - $started;
    $node->safe_psql('postgres', 'CREATE DATABASE restored');
    $node->safe_psql('restored', 'CREATE EXTENSION snowflake');
    $started = time;
    system_or_bail('pg_restore', '--exit-on-error', '-j', $cores, '-d', $node->connstr('restored'),
        $dump_file);
    my $restore_s = time - $started;
    my $restored = $node->safe_psql('restored', "SELECT $fingerprint");
    my $fresh = $node->safe_psql('restored',
        q(INSERT INTO orders (note) VALUES ('new') RETURNING id > 1000000));
    $node->safe_psql('postgres', 'DROP DATABASE restored');
    $session->query_safe('DROP TABLE invoices, order_lines, orders');
    $session->quit;

    say_out("## 8. Converting a 1,000,000-row serial table\n\n",
        "`orders` (1,000,000 rows, `serial`) referenced by `order_lines` (1,000,000 rows, ",
        "`integer`) and `invoices` (500,000 rows, `bigint`); median of $runs runs each, ",
        "interleaved, after `VACUUM ANALYZE` and `CHECKPOINT`.\n\n");
    my $alter = median(@{ $ms{ $ways[1][0] } });
    table([ 'way', 'median ms', 'ms / ALTER TABLE ms' ], map {
        my $median = median(@{ $ms{ $_->[0] } });
        [ $_->[0], fmt('%.0f', $median), fmt('%.2f', $median / $alter) ]
    } @ways);
    table([ 'after', 'rows and key checksums (orders, order_lines, invoices)' ],
        [ 'before the conversion', "`$before`" ], [ 'after the conversion', "`$after`" ],
        [ 'after pg_dump -Fc and pg_restore', "`$restored`" ]);
    say_out(sprintf("One conversion: %.0f ms; pg_dump -Fc %.1f s, pg_restore -j %d %.1f s; a new "
          . "row in the restored database gets a Snowflake id above the old keys: %s.\n\n",
        $convert_ms, $dump_s, $cores, $restore_s, $fresh eq 't' ? 'yes' : 'no'));
}

# Case 9: what the planner hook costs ordinary queries: pgbench -S (primary-key lookups, simple
# protocol, so each is planned) with the library preloaded against a server without it.
sub hook_cost {
    my ($node) = @_;
    my $plain = bench_server('plain', preload => 0);
    system_or_bail('pgbench', '-i', '-q', '-s', '10', '-d', $_->connstr('postgres'))
      for $node, $plain;
    my $seconds = 5;
    my %tps;
    for my $run (1 .. $repetitions) {
        for my $server ([ 'preloaded', $node ], [ 'not preloaded', $plain ]) {
            push @{ $tps{ $server->[0] } },
              pgbench_tps($server->[1], '-c', 2, '-j', 2, '-S', '-M', 'simple', '-T', $seconds);
        }
    }
    $plain->stop;
    $node->safe_psql('postgres',
        'DROP TABLE pgbench_accounts, pgbench_branches, pgbench_history, pgbench_tellers');
    my $without = median(@{ $tps{'not preloaded'} });
    say_out("## 9. The planner hook on ordinary queries\n\n",
        "`pgbench -S -M simple`, scale 10, 2 clients, $seconds s per run, $repetitions runs per ",
        "server, interleaved; the database has the extension in both.\n\n");
    table([ 'server', 'median tps', 'tps / not preloaded' ], map {
        my $median = median(@{ $tps{$_} });
        [ $_, fmt('%.0f', $median), fmt('%.3f', $median / $without) ]
    } 'preloaded', 'not preloaded');
}

# The process id of a server's postmaster.
sub postmaster_pid {
    my ($node) = @_;
    open my $pidfile, '<', $node->data_dir . '/postmaster.pid' or die "postmaster.pid: $!";
    chomp(my $pid = <$pidfile>);
    return $pid;
}

# Waits until a postmaster has no client backend left (a process title with the client's
# address: [local] or host(port)) and none it has yet to reap, so that the CPU time of every
# backend that has served a client is in the postmaster's cutime and cstime.
sub wait_for_no_client_backends {
    my ($postmaster) = @_;
    for (my $tries = 0; ; $tries++) {
        open my $fh, '<', "/proc/$postmaster/task/$postmaster/children"
          or die "children of $postmaster: $!";
        my @children = split ' ', scalar(<$fh>) // '';
        # A backend that has exited counts until the postmaster has reaped it (a zombie, with no
        # command line), since only then is its CPU time in the postmaster's.
        my @backends = grep {
            open my $title, '<', "/proc/$_/cmdline";    # reaped already if this fails
            my $command = $title ? (scalar(<$title>) // '') : undef;
            open my $stat, '<', "/proc/$_/stat";
            my $zombie = $stat && (scalar(<$stat>) // '') =~ /\) Z /;
            defined $command && ($command =~ /\[local\]|\(\d+\)/ || $zombie)
        } @children;
        return unless @backends;
        die "client backends @backends did not exit\n" if $tries > 200;
        sleep 0.05;
    }
}

# CPU milliseconds of the postmaster's exited children (its cutime and cstime, in clock ticks).
sub exited_children_cpu_ms {
    my ($pid) = @_;
    open my $fh, '<', "/proc/$pid/stat" or die "stat of $pid: $!";
    # The fields after the command name, whose parentheses may hold spaces, start at the third.
    my @fields = split ' ', (scalar <$fh>) =~ s/^.*\) //sr;
    return ($fields[13] + $fields[14]) * 1000 / POSIX::sysconf(POSIX::_SC_CLK_TCK);
}

# The tps of a pgbench run and the CPU microseconds its backends spent per transaction, which the
# postmaster collects from each backend as it exits: read before the run and after it, each time
# once no client backend is left.
sub pgbench_tps_and_cpu_us {
    my ($node, @arguments) = @_;
    my $postmaster = postmaster_pid($node);
    wait_for_no_client_backends($postmaster);
    my $cpu_before = exited_children_cpu_ms($postmaster);
    my ($stdout, $stderr) = run_command(pgbench_command($node, @arguments));
    wait_for_no_client_backends($postmaster);
    my ($transactions) = $stdout =~ /number of transactions actually processed: (\d+)/;
    die "no transaction count in pgbench output:\n$stdout$stderr" unless $transactions;
    return (tps_of($stdout, $stderr),
        (exited_children_cpu_ms($postmaster) - $cpu_before) * 1000 / $transactions);
}

# The plan of a statement as EXPLAIN ANALYZE prints it without timings: the rows, the sort method
# and the hash batches, which the two types' plans should share.
sub plan_shape {
    my ($session, $sql) = @_;
    my ($plan) = timed($session, "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) $sql");
    return join "\n", @$plan;
}

# Case 10: the snowflake type against bigint, whose representation and functions it shares:
# building a unique btree index, primary-key lookups, single-row inserts, an in-memory sort and
# a hash join, on the same ids in the same order.
sub type_cost {
    my ($node) = @_;
    my $rows = $ENV{BENCH_TYPE_ROWS} // 10_000_000;
    my $small = int($rows / 10);
    my $seconds = 5;
    my $start_ms = 1764547200000;    # 2025-12-01 00:00:00 UTC
    my @types = qw(bigint snowflake);
    my $session = open_session($node);
    # One backend does each timed statement, in memory and without JIT; a scan reads its table
    # from the first block, so that the two tables are read alike; the join is a hash join.
    $session->query_safe($_) for ('SET max_parallel_workers_per_gather = 0',
        'SET max_parallel_maintenance_workers = 0', "SET work_mem = '1GB'",
        "SET maintenance_work_mem = '2GB'", 'SET jit = off', 'SET synchronize_seqscans = off',
        'SET enable_mergejoin = off', 'SET enable_nestloop = off');
    # Ids 1 ms apart, so that pgbench can compute any of them, stored shuffled, so that sorting
    # them is work; the smaller tables hold the first tenth of them, and the same ids reshuffled
    # to join with.
    $session->query_safe(<<"SQL");
CREATE TABLE type_bigint (id bigint NOT NULL);
INSERT INTO type_bigint
SELECT snowflake_encode($start_ms + n, 1, 1, 0) FROM generate_series(0, $rows - 1) AS n
ORDER BY random();
CREATE TABLE type_snowflake (id snowflake NOT NULL);
INSERT INTO type_snowflake SELECT id FROM type_bigint;
CREATE TABLE keys_bigint AS SELECT id FROM type_bigint LIMIT $small;
CREATE TABLE keys_snowflake AS SELECT id::snowflake AS id FROM keys_bigint;
CREATE TABLE refs_bigint AS SELECT id FROM keys_bigint ORDER BY random();
CREATE TABLE refs_snowflake AS SELECT id::snowflake AS id FROM refs_bigint;
CREATE TABLE insert_bigint_key (id bigint PRIMARY KEY DEFAULT snowflake_nextval());
CREATE TABLE insert_snowflake_key (id snowflake PRIMARY KEY DEFAULT snowflake_nextval());
ANALYZE
SQL
    # Every page all-visible, so that the scans and the index-only lookups treat both tables
    # alike; VACUUM skips the pages it cannot lock at once, which a page being written holds.
    my $not_all_visible = q(SELECT string_agg(relname, ', ') FROM pg_class
        WHERE relname ~ '^(type|keys|refs)_' AND relkind = 'r' AND relallvisible < relpages);
    for (my $tries = 0; ((timed($session, $not_all_visible))[0][0] // '') ne ''; $tries++) {
        die "not all-visible after $tries VACUUMs\n" if $tries == 5;
        $session->query_safe('CHECKPOINT');
        $session->query_safe('VACUUM type_bigint, type_snowflake, keys_bigint, keys_snowflake, '
              . 'refs_bigint, refs_snowflake');
    }
    $session->query_safe('CHECKPOINT');
    my %statements = (
        sort => "SELECT id FROM keys_%s ORDER BY id OFFSET $small",
        join => 'SELECT count(*) FROM keys_%1$s AS k JOIN refs_%1$s AS r ON r.id = k.id');
    my $in_order = sub { $_[0] % 2 ? @types : reverse @types };
    my %ms;
    my $timed_with_cpu = sub {
        my ($operation, $type, $sql) = @_;
        my $cpu_before = backend_cpu_ns($session->{backend_pid});
        push @{ $ms{$operation}{$type} }, timed_ms($session, $sql);
        push @{ $ms{"$operation cpu"}{$type} },
          (backend_cpu_ns($session->{backend_pid}) - $cpu_before) / 1e6;
    };
    for my $run (1 .. $repetitions) {
        for my $type ($in_order->($run)) {
            $session->query_safe("DROP INDEX IF EXISTS type_${type}_id");
            $timed_with_cpu->('index', $type,
                "CREATE UNIQUE INDEX type_${type}_id ON type_$type (id)");
        }
    }
    # Untimed passes first, so that every timed one finds the tables in shared buffers.
    for my $operation (qw(sort join)) {
        $session->query_safe(sprintf($statements{$operation}, $_)) for @types;
        for my $run (1 .. $repetitions) {
            $timed_with_cpu->($operation, $_, sprintf($statements{$operation}, $_))
              for $in_order->($run);
        }
    }
    $session->query_safe("ALTER TABLE type_$_ ADD CONSTRAINT type_${_}_pkey PRIMARY KEY "
          . "USING INDEX type_${_}_id") for @types;
    # The id of row n of the tables, as pgbench and the loop below compute it.
    my $first_id = (($start_ms - 1288834974657) << 22) | (1 << 17) | (1 << 12);
    # Lookups in a loop in the backend itself, which leaves out the client and the protocol:
    # what is left is the cost of executing one statement, the same each time.
    my $loop_lookups = min($rows, 200_000);
    $session->query_safe(sprintf(<<'SQL', $_, $first_id, $rows)) for @types;
CREATE FUNCTION type_lookups_%1$s(lookups integer) RETURNS bigint LANGUAGE plpgsql
SET search_path = pg_catalog, public AS $$
DECLARE
    found bigint := 0;
    wanted %1$s;
    got %1$s;
BEGIN
    FOR i IN 0 .. lookups - 1 LOOP
        wanted := %2$s + ((i::bigint * 7919 %% %3$s) << 22);
        SELECT id INTO got FROM type_%1$s WHERE id = wanted;
        found := found + (got IS NOT NULL)::integer;
    END LOOP;
    RETURN found;
END $$
SQL
    # An untimed pass of each first: CREATE INDEX writes the index past shared buffers.
    $session->query_safe("SELECT type_lookups_$_($loop_lookups)") for @types;
    for my $run (1 .. $repetitions) {
        for my $type ($in_order->($run)) {
            my $cpu_before = backend_cpu_ns($session->{backend_pid});
            my ($found) = timed($session, "SELECT type_lookups_$type($loop_lookups)");
            die "$found->[0] of $loop_lookups lookups found their row\n"
              unless $found->[0] == $loop_lookups;
            push @{ $ms{'loop cpu'}{$type} },
              (backend_cpu_ns($session->{backend_pid}) - $cpu_before) / 1e3 / $loop_lookups;
        }
    }
    my %plans = map {
        my $type = $_;
        $type => [ map { plan_shape($session, sprintf($statements{$_}, $type)) } qw(sort join) ]
    } @types;
    $session->quit;

    # pgbench's ids checked on the last row.
    my $last_id = $first_id + (($rows - 1) << 22);
    die "the lookups' ids are not the tables' ids\n"
      unless $node->safe_psql('postgres', "SELECT count(*) FROM type_snowflake WHERE id = $last_id")
      == 1;
    my $lookup = sub {
        script('type_lookup', "\\set n random(0, $rows - 1)\n\\set id $first_id + (:n << 22)\n"
              . "SELECT id FROM type_$_[0] WHERE id = :id");
    };
    # An untimed run of each first: CREATE INDEX writes the index past shared buffers.
    pgbench_tps($node, '-M', 'prepared', '-c', 4, '-j', 2, '-T', 2, '-f', $lookup->($_)) for @types;
    my %tps;
    for my $run (1 .. $repetitions) {
        for my $type ($in_order->($run)) {
            my ($tps, $cpu_us) = pgbench_tps_and_cpu_us($node, '-M', 'prepared', '-c', 4, '-j', 2,
                '-T', $seconds, '-f', $lookup->($type));
            push @{ $tps{lookup}{$type} }, $tps;
            push @{ $tps{'lookup cpu'}{$type} }, $cpu_us;
        }
    }
    for my $run (1 .. $repetitions) {
        for my $type ($in_order->($run)) {
            my ($tps, $cpu_us) = pgbench_tps_and_cpu_us($node, '-M', 'prepared', '-c', 8, '-j', 2,
                '-T', $seconds, '-f',
                script('type_insert', "INSERT INTO insert_${type}_key DEFAULT VALUES"));
            push @{ $tps{insert}{$type} }, $tps;
            push @{ $tps{'insert cpu'}{$type} }, $cpu_us;
        }
    }
    $node->safe_psql('postgres', join ';', map {
        "DROP TABLE type_$_, keys_$_, refs_$_, insert_${_}_key; DROP FUNCTION type_lookups_$_"
    } @types);

    say_out("## 10. The snowflake type against bigint\n\n",
        "The same ids (`snowflake_encode()`, 1 ms apart) in the same shuffled order in a ",
        "`bigint` and a `snowflake` column: $rows rows for the index and the lookups, $small ",
        "for the sort and the join (each side). One backend without parallel workers or JIT, ",
        "in memory (`work_mem` 1GB, `maintenance_work_mem` 2GB); lookups and inserts through ",
        "`pgbench -M prepared` (2 threads, $seconds s per run), and lookups in a loop in one ",
        "backend, which leaves out the client and the protocol. $repetitions runs of each, ",
        "interleaved, the order reversed every other run; medians. Backend CPU ms is the CPU ",
        "time of the backend that ran the statement, and backend CPU µs that of pgbench's ",
        "backends (collected by the postmaster as they exit) per transaction: load from other ",
        "processes does not inflate them as it does elapsed time and tps. The ratio is ",
        "snowflake / bigint: the type costs more where it is above 1 for ms and µs, below 1 for ",
        "tps.\n\n");
    my @operations = (
        [ "CREATE UNIQUE INDEX, $rows rows, ms", 'index', '%.0f' ],
        [ "CREATE UNIQUE INDEX, $rows rows, backend CPU ms", 'index cpu', '%.0f' ],
        [ 'primary-key lookups (`WHERE id = :id`), 4 clients, tps', 'lookup', '%.0f' ],
        [ 'primary-key lookups, backend CPU µs per lookup', 'lookup cpu', '%.1f' ],
        [ "primary-key lookups in a PL/pgSQL loop in one backend, $loop_lookups per run, "
            . 'backend CPU µs per lookup', 'loop cpu', '%.2f' ],
        [ 'single-row inserts (`DEFAULT snowflake_nextval()`), 8 clients, tps', 'insert', '%.0f' ],
        [ 'single-row inserts, backend CPU µs per insert', 'insert cpu', '%.1f' ],
        [ "`ORDER BY id`, $small rows, ms", 'sort', '%.1f' ],
        [ "`ORDER BY id`, $small rows, backend CPU ms", 'sort cpu', '%.1f' ],
        [ "hash join on id, $small x $small rows, ms", 'join', '%.1f' ],
        [ "hash join on id, $small x $small rows, backend CPU ms", 'join cpu', '%.1f' ],
    );
    table([ 'operation', 'bigint', 'snowflake', 'snowflake / bigint' ], map {
        my ($label, $key, $format) = @$_;
        my $figures = $ms{$key} // $tps{$key};
        my ($bigint, $snowflake) = map { median(@{ $figures->{$_} }) } @types;
        [ $label, fmt($format, $bigint), fmt($format, $snowflake),
          fmt('%.3f', $snowflake / $bigint) ]
    } @operations);
    my $renamed = join("\n", @{ $plans{snowflake} }) =~ s/snowflake/bigint/gr;
    my $same = $renamed eq join("\n", @{ $plans{bigint} });
    say_out("Plans of the sort and the join over `snowflake` (`EXPLAIN ANALYZE`); those over ",
        "`bigint` are ", $same ? 'the same but for the table names' : 'below them', ":\n\n```\n",
        join("\n\n", @{ $plans{snowflake} }, $same ? () : @{ $plans{bigint} }), "\n```\n\n");
}

# Case 11: snowflake_maintain_partitions() on a table of 36 monthly partitions (32 months back,
# the current one, 3 ahead) holding BENCH_PARTITION_ROWS rows (10,000,000 unless set) spread over
# the past months: when nothing is due, for the one table and for every table set up, and when
# one partition is due (a larger ahead in the setup).
sub partition_maintenance {
    my ($node) = @_;
    my $rows = $ENV{BENCH_PARTITION_ROWS} // 10_000_000;
    my $session = open_session($node);
    $session->query_safe(q(
CREATE TABLE bench_events (id bigint NOT NULL DEFAULT snowflake_nextval() PRIMARY KEY,
                           body integer NOT NULL) PARTITION BY RANGE (id);
CREATE TABLE bench_events_first PARTITION OF bench_events FOR VALUES
    FROM (snowflake_min_id(date_trunc('month', now(), 'UTC') - interval '32 months'))
    TO (snowflake_min_id(date_trunc('month', now(), 'UTC') - interval '31 months'));
INSERT INTO bench_events VALUES
    (snowflake_min_id(date_trunc('month', now(), 'UTC') - interval '32 months'), 0);
));
    my $setup_ms = timed_ms($session,
        q(SELECT count(*) FROM snowflake_partition_table('bench_events', '1 month', 3)));
    # One row every few seconds from 32 months back to now, each id its own millisecond.
    $session->query_safe(qq(
INSERT INTO bench_events
SELECT snowflake_encode(start + (now() - start) * (g::float8 / ($rows + 1)), 1, 1, 0), g
FROM (SELECT date_trunc('month', now(), 'UTC') - interval '32 months' AS start) AS s,
     generate_series(1, $rows) AS g;
VACUUM ANALYZE bench_events;
CHECKPOINT;
));
    my ($partitions) = @{ (timed($session,
        q(SELECT count(*) FROM pg_inherits WHERE inhparent = 'bench_events'::regclass)))[0] };
    my %ms;
    for my $run (1 .. $repetitions) {
        push @{ $ms{one} },
          timed_ms($session, q(SELECT count(*) FROM snowflake_maintain_partitions('bench_events')));
        push @{ $ms{all} }, timed_ms($session, q(SELECT count(*) FROM snowflake_maintain_partitions()));
    }
    my ($nothing) = @{ (timed($session,
        q(SELECT string_agg(action, ', ') FROM snowflake_maintain_partitions('bench_events'))))[0] };
    for my $run (1 .. $repetitions) {
        my $ahead = 3 + $run;
        push @{ $ms{due} }, timed_ms($session,
            "SELECT count(*) FROM snowflake_partition_table('bench_events', '1 month', $ahead)");
    }
    $session->query_safe('DROP TABLE bench_events');
    $session->quit;

    say_out("## 11. Partition maintenance

",
        "`bench_events`: $partitions monthly partitions (32 months back, the current one, 3 ",
        "ahead at first), $rows rows spread over the past months, after `VACUUM ANALYZE` and ",
        "`CHECKPOINT`; $repetitions runs each, medians. Setting the table up (adopting one ",
        sprintf('partition, creating %d): %.0f ms. ', $partitions - 1, $setup_ms),
        "With nothing due, maintenance returned `$nothing`.

");
    table([ 'call', 'median ms', 'max ms' ], map {
        my ($label, $key) = @$_;
        [ $label, fmt('%.1f', median(@{ $ms{$key} })), fmt('%.1f', max(@{ $ms{$key} })) ]
    } [ "`snowflake_maintain_partitions('bench_events')`, nothing due", 'one' ],
      [ '`snowflake_maintain_partitions()`, nothing due', 'all' ],
      [ '`snowflake_partition_table()` with one more ahead: one partition created', 'due' ]);
}

# Case 12: the first id after a start without the mark file, which waits until the keys reader has
# read every database: a table of BENCH_FLOOR_ROWS rows (24,000,000 unless set, about 1 GB) keyed
# by DEFAULT snowflake_nextval() with no index, read whole, then the same table with its primary
# key, read through the index. Warm: the table stays in the operating system's cache.
sub floor_read {
    my ($node) = @_;
    my $rows = $ENV{BENCH_FLOOR_ROWS} // 24_000_000;
    $node->safe_psql('postgres', qq(
CREATE TABLE bench_floor (id bigint DEFAULT snowflake_nextval(), pad integer);
INSERT INTO bench_floor (pad) SELECT 1 FROM generate_series(1, $rows);
VACUUM ANALYZE bench_floor;
));
    my %ms;
    my %megabytes;
    for my $layout ('no index', 'primary key') {
        $node->safe_psql('postgres', 'ALTER TABLE bench_floor ADD PRIMARY KEY (id)')
          if $layout eq 'primary key';
        $megabytes{$layout} = $node->safe_psql('postgres',
            q(SELECT pg_total_relation_size('bench_floor') / 1048576));
        for my $run (1 .. $repetitions) {
            $node->stop;
            unlink $node->data_dir . '/snowflake_mark' or die "no mark file: $!";
            my $offset = -s $node->logfile;
            my $started = time;
            $node->start;
            $node->safe_psql('postgres', 'SELECT snowflake_nextval()');
            push @{ $ms{$layout}{first_id} }, (time - $started) * 1000;
            my ($read_ms) = slurp_file($node->logfile, $offset) =~
              /the stored keys of \d+ databases were read in (\d+) ms/
              or die 'the keys reader logged no read';
            push @{ $ms{$layout}{read} }, $read_ms;
        }
    }
    $node->safe_psql('postgres', 'DROP TABLE bench_floor');

    say_out("## 12. The floor from stored keys

",
        "`bench_floor`: $rows rows of `(id bigint DEFAULT snowflake_nextval(), pad integer)`; the ",
        "server stopped, its mark file removed and started again, $repetitions runs each, ",
        "warm (the table in the operating system's cache), medians. \"read\" is what the keys ",
        "reader logs; \"first id\" runs from the start of `pg_ctl start` to the first ",
        "`snowflake_nextval()` returning.

");
    table([ 'key column', 'MB', 'read ms', 'first id ms', 'read ms per GB' ], map {
        my $layout = $_;
        my $read = median(@{ $ms{$layout}{read} });
        [ $layout, $megabytes{$layout}, fmt('%.0f', $read),
          fmt('%.0f', median(@{ $ms{$layout}{first_id} })),
          fmt('%.0f', $read * 1024 / $megabytes{$layout}) ]
    } 'no index', 'primary key');
}

# The kind of scan in a plan: an index range (and the index) or a sequential scan.
sub scan_kind {
    my ($plan) = @_;
    my $text = join "\n", @$plan;
    return "index range ($1 on `$2`)" if $text =~ /((?:Bitmap )?Index(?: Only)? Scan) using (\S+)/;
    return 'sequential scan (parallel)' if $text =~ /Parallel Seq Scan/;
    return 'sequential scan' if $text =~ /Seq Scan/;
    return 'other';
}

# Case 13: the keys users weigh against snowflake, side by side on one server: bigint DEFAULT
# snowflake_nextval(), bigserial, uuid DEFAULT uuidv7() (PostgreSQL 18 and later) and uuid DEFAULT
# gen_random_uuid(). A bulk insert of BENCH_UUID_ROWS rows (2,000,000 unless set) into an empty
# table, the sizes of the table and its primary key after it, a time range by the id alone (the
# newest hundredth of the rows), and single-row inserts from 1 and 8 clients into the loaded tables.
sub uuid_keys {
    my ($node) = @_;
    my $rows = $ENV{BENCH_UUID_ROWS} // 2_000_000;
    my $seconds = 5;
    my $window = max(1, int($rows / 100));
    my $version = $node->safe_psql('postgres', 'SHOW server_version');
    my $has_uuidv7 =
      $node->safe_psql('postgres', q(SELECT current_setting('server_version_num')::int)) >= 180000;
    # Name, label, column, and the expression of the id's time, for the keys that hold one.
    my @keys = (
        [ 'snowflake', '`bigint DEFAULT snowflake_nextval()`',
          'id bigint PRIMARY KEY DEFAULT snowflake_nextval()', 'snowflake_timestamp(id)' ],
        [ 'bigserial', '`bigserial`', 'id bigserial PRIMARY KEY', undef ],
        $has_uuidv7 ? [ 'uuidv7', '`uuid DEFAULT uuidv7()`', 'id uuid PRIMARY KEY DEFAULT uuidv7()',
          'uuid_extract_timestamp(id)' ] : (),
        [ 'random_uuid', '`uuid DEFAULT gen_random_uuid()`',
          'id uuid PRIMARY KEY DEFAULT gen_random_uuid()', undef ],
    );
    my @timed_keys = grep { defined $_->[3] } @keys;
    my $session = open_session($node);
    my $bulk = sub { "INSERT INTO keyed_$_[0] (payload) SELECT 'x' FROM generate_series(1, $_[1])" };
    # One untimed insert into each first, so that no timed run pays for a cold start.
    $session->query_safe("CREATE TABLE keyed_$_->[0] ($_->[2], payload text NOT NULL)")
      for @keys;
    $session->query_safe($bulk->($_->[0], min($rows, 100_000))) for @keys;
    my (%ms, %index_mb, %table_mb);
    for my $run (1 .. $repetitions) {
        for my $key (@keys) {
            my ($name, undef, $column) = @$key;
            # An empty table each time, and no dirty buffers of the last one to write meanwhile.
            $session->query_safe("DROP TABLE IF EXISTS keyed_$name");
            $session->query_safe("CREATE TABLE keyed_$name ($column, payload text NOT NULL)");
            $session->query_safe('CHECKPOINT');
            push @{ $ms{bulk}{$name} }, timed_ms($session, $bulk->($name, $rows));
            my ($sizes) = timed($session,
                "SELECT pg_relation_size('keyed_${name}_pkey'), pg_table_size('keyed_$name')");
            my ($index_bytes, $table_bytes) = split /\|/, $sizes->[0];
            push @{ $index_mb{$name} }, $index_bytes / 1048576;
            push @{ $table_mb{$name} }, $table_bytes / 1048576;
        }
    }

    # The time range: from the time of each table's $window-th newest id on, by the id alone.
    $session->query_safe('VACUUM ANALYZE ' . join(', ', map { "keyed_$_->[0]" } @keys));
    my %range;
    for my $key (@timed_keys) {
        my ($name, undef, undef, $time) = @$key;
        my $offset = $window - 1;
        my ($from) = @{ (timed($session,
            "SELECT $time FROM keyed_$name ORDER BY id DESC OFFSET $offset LIMIT 1"))[0] };
        my $sql = "SELECT count(*), sum(length(payload)) FROM keyed_$name WHERE $time >= '$from'";
        my ($count) = split /\|/, (timed($session, $sql))[0][0];    # untimed, as the first pass
        $range{$name} = { sql => $sql, rows => $count,
            plan => (timed($session, "EXPLAIN (COSTS OFF) $sql"))[0] };
    }
    for my $run (1 .. $repetitions) {
        push @{ $ms{range}{ $_->[0] } }, timed_ms($session, $range{ $_->[0] }{sql}) for @timed_keys;
    }
    $session->quit;

    my %tps;
    for my $clients (1, 8) {
        for my $run (1 .. $repetitions) {
            for my $name (map { $_->[0] } @keys) {
                push @{ $tps{$clients}{$name} }, pgbench_tps($node, '-c', $clients, '-j',
                    min($clients, 2), '-T', $seconds, '-f',
                    script('keyed_insert', "INSERT INTO keyed_$name (payload) VALUES ('x')"));
            }
        }
    }
    $node->safe_psql('postgres', 'DROP TABLE ' . join(', ', map { "keyed_$_->[0]" } @keys));

    say_out("## 13. Snowflake ids against uuidv7() and the other keys\n\n");
    say_out("Case 13 needs PostgreSQL 18 for `uuidv7()` and `uuid_extract_timestamp()`; this ",
        "server is $version, so the `uuidv7()` key is left out.\n\n") unless $has_uuidv7;
    say_out("One table per key, `(id <key> PRIMARY KEY, payload text NOT NULL)`, on one server. ",
        "Bulk insert: `INSERT INTO t (payload) SELECT 'x' FROM generate_series(1, $rows)` into ",
        "an empty table (made anew, after a `CHECKPOINT`); the sizes are those right after it ",
        "(`pg_relation_size` of the primary key, `pg_table_size` of the table). Single-row ",
        "inserts: pgbench, `INSERT INTO t (payload) VALUES ('x')`, $seconds s per run, into the ",
        "loaded tables. $repetitions runs of each, interleaved; medians.\n\n");
    my $snowflake_bulk = median(@{ $ms{bulk}{snowflake} });
    table([ 'key', 'bulk insert ms', 'rows/s', 'ms / snowflake ms', 'single-row tps, 1 client',
            'single-row tps, 8 clients', 'primary key MB', 'table MB' ], map {
        my ($name, $label) = @$_;
        my $bulk_ms = median(@{ $ms{bulk}{$name} });
        [ $label, fmt('%.0f', $bulk_ms), fmt('%.0f', $rows / $bulk_ms * 1000),
          fmt('%.2f', $bulk_ms / $snowflake_bulk), fmt('%.0f', median(@{ $tps{1}{$name} })),
          fmt('%.0f', median(@{ $tps{8}{$name} })), fmt('%.1f', median(@{ $index_mb{$name} })),
          fmt('%.1f', median(@{ $table_mb{$name} })) ]
    } @keys);
    say_out("A time range by the id alone, after `VACUUM ANALYZE` of the loaded tables: the rows ",
        "from the time of the ${window}th newest id on (the newest hundredth, as the last minute ",
        "is of a table that holds 100 minutes), `SELECT count(*), sum(length(payload))`. The ",
        "planner hook turns `snowflake_timestamp(id) >= t` into a range of the primary key",
        $has_uuidv7 ? '; nothing indexes `uuid_extract_timestamp(id)`' : '',
        ". `bigserial` and `gen_random_uuid()` carry no time.\n\n");
    table([ 'key', 'predicate', 'rows', 'median ms', 'plan' ], map {
        my ($name, $label, undef, $time) = @$_;
        defined $time
          ? [ $label, "`$time >= t`", $range{$name}{rows},
              fmt('%.2f', median(@{ $ms{range}{$name} })), scan_kind($range{$name}{plan}) ]
          : [ $label, '—', '—', '—', 'no time in the key' ]
    } @keys);
    say_out("Plan for $_->[1]:\n\n```\n", map({ "$_\n" } @{ $range{ $_->[0] }{plan} }), "```\n\n")
      for @timed_keys;
}

# Case 14: what the settled bound costs the generator, against a baseline build of the extension
# (test/bench/run builds BENCH_BASELINE into a copy of the server's installation, whose prefix
# comes in BENCH_BASELINE_PREFIX): 1,000,000 ids in one statement, single-row inserts from 1, 2,
# 4 and 8 clients, on two servers run in turn; then the bound's call with 100 other backends
# connected.
sub settled_cost {
    my ($node) = @_;
    my $prefix = $ENV{BENCH_BASELINE_PREFIX};
    say_out("## 14. What the settled bound costs

");
    if (!$prefix) {
        say_out("Case 14 needs a baseline: BENCH_BASELINE=<git revision> test/bench/run.\n\n");
        return;
    }
    my $seconds = 5;
    my $baseline = snowflake_node('baseline', install_path => $prefix, machine_id => 2);
    $baseline->append_conf('postgresql.conf', $server_settings);
    $baseline->start;
    $baseline->safe_psql('postgres', 'CREATE EXTENSION snowflake');
    my %servers = (baseline => $baseline, this => $node);
    my %label = (baseline => "baseline ($ENV{BENCH_BASELINE})", this => 'this build');
    my $table = 'CREATE TABLE settled_rows (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), '
      . 'payload text NOT NULL)';
    # Transactions of one id each, committed in a procedure: what the claim costs a transaction,
    # in one backend, without a client's round trips.
    my $procedure = 'CREATE PROCEDURE ids_in_transactions(n integer) LANGUAGE plpgsql AS $$ '
      . 'BEGIN FOR i IN 1 .. n LOOP PERFORM snowflake_nextval(); COMMIT; END LOOP; END $$';
    $_->safe_psql('postgres', "$table; $procedure") for values %servers;
    my $transactions = 200_000;
    my $insert = script('settled_insert', "INSERT INTO settled_rows (payload) VALUES ('x')");
    # Runs in pairs, one on each server, in alternating order, so that a drift of the machine
    # falls on both; the ratio of each pair is kept as well as the values.
    my (%ms, %tps, %ratio);
    my %sessions = map { $_ => open_session($servers{$_}) } keys %servers;
    for my $run (1 .. $repetitions) {
        my @order = $run % 2 ? qw(baseline this) : qw(this baseline);
        my %run_ms = map {
            $_ => timed_ms($sessions{$_},
                'SELECT count(snowflake_nextval()) FROM generate_series(1, 1000000)')
        } @order;
        push @{ $ms{$_} }, $run_ms{$_} for @order;
        push @{ $ratio{ids} }, $run_ms{this} / $run_ms{baseline};
        my %run_tx_ms = map {
            $_ => timed_ms($sessions{$_}, "CALL ids_in_transactions($transactions)")
        } @order;
        push @{ $ms{"tx_$_"} }, $run_tx_ms{$_} for @order;
        push @{ $ratio{tx} }, $run_tx_ms{this} / $run_tx_ms{baseline};
        for my $clients (1, 2, 4, 8) {
            my %run_tps = map {
                $_ => pgbench_tps($servers{$_}, '-c', $clients, '-j', min($clients, 2), '-T',
                    $seconds, '-f', $insert)
            } @order;
            push @{ $tps{$clients}{$_} }, $run_tps{$_} for @order;
            push @{ $ratio{$clients} }, $run_tps{baseline} / $run_tps{this};
        }
    }
    $_->quit for values %sessions;
    $baseline->stop;

    # The bound's call, while 100 other backends sit connected (pgbench clients asleep).
    my $idle = "$work_dir/settled_idle.sql";
    PostgreSQL::Test::Utils::append_to_file($idle, "\\sleep 600 s\n");
    my $sleepers = IPC::Run::start(pgbench_command($node, '-c', 100, '-j', 2, '-t', 1, '-f', $idle),
        '>', \my $out, '2>', \my $err);
    my $connected = q(SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend');
    for (my $tries = 0; $node->safe_psql('postgres', $connected) < 101; $tries++) {
        die "pgbench's 100 clients did not connect:\n$err\n" if $tries > 300 || !$sleepers->pumpable;
        sleep 0.1;
    }
    my $calls = 100_000;
    my $session = open_session($node);
    my @call_us = map {
        timed_ms($session, "SELECT count(snowflake_settled_bound()) FROM generate_series(1, $calls)")
          * 1000 / $calls
    } 1 .. $repetitions;
    $session->quit;
    $sleepers->kill_kill;

    say_out("Two servers, one with this build and one with the baseline, tested in pairs of ",
        "runs in alternating order, $repetitions pairs, medians. One statement: `SELECT count(snowflake_nextval()) FROM ",
        "generate_series(1, 1000000)`. Transactions: `CALL ids_in_transactions($transactions)`, ",
        "a procedure that commits after each id. Single-row inserts: pgbench, `INSERT INTO t (payload) ",
        "VALUES ('x')` into `(id bigint PRIMARY KEY DEFAULT snowflake_nextval(), payload text)`, ",
        "$seconds s per run.\n\n");
    table([ 'build', '1,000,000 ids ms', "$transactions transactions ms", 'tps, 1 client',
            'tps, 2', 'tps, 4', 'tps, 8' ], map {
        my $name = $_;
        [ $label{$name}, fmt('%.0f', median(@{ $ms{$name} })),
          fmt('%.0f', median(@{ $ms{"tx_$name"} })),
          map { fmt('%.0f', median(@{ $tps{$_}{$name} })) } 1, 2, 4, 8 ]
    } qw(baseline this));
    my @ratios = map { median(@{ $ratio{$_} }) } 'ids', 'tx', 1, 2, 4, 8;
    say_out(sprintf("This build's time against the baseline's, the median of the pairs' ratios: "
        . "%s (1,000,000 ids; $transactions transactions; then 1, 2, 4 and 8 clients, as time "
        . "per insert). The claim costs a transaction %.0f ns in one backend.\n\n",
        join(', ', map { sprintf('%+.1f%%', ($_ - 1) * 100) } @ratios),
        (median(@{ $ms{tx_this} }) - median(@{ $ms{tx_baseline} })) * 1e6 / $transactions));
    say_out(sprintf("`snowflake_settled_bound()` with 100 other backends connected: %.2f µs per ",
        median(@call_us)), "call (`SELECT count(snowflake_settled_bound()) FROM generate_series(1, ",
        "$calls)`, median of $repetitions).\n\n");
}

# Case 15: following changes (1.12). Single-row inserts and updates at 1 and 8 clients on a tracked
# table, against the same table kept by a PL/pgSQL updated_at = now() trigger with an index on
# updated_at; paging BENCH_CHANGES_ROWS changes (1,000,000 unless set) with snowflake_changes()
# against as many rows with snowflake_settled_rows(); and the time from a row's insert to its read
# by a reader that polls every 10 ms, under 8 writers.
sub following_changes {
    my ($node) = @_;
    my $rows = $ENV{BENCH_CHANGES_ROWS} // 1_000_000;
    my $keys = 100_000;
    my $columns = 'id bigint PRIMARY KEY DEFAULT snowflake_nextval(), k integer NOT NULL UNIQUE, '
      . 'n integer NOT NULL DEFAULT 0, note text';
    $node->safe_psql('postgres', qq(
CREATE TABLE kept_tracked ($columns);
SELECT snowflake_track_changes('kept_tracked');
CREATE TABLE kept_updated_at ($columns, updated_at timestamptz);
CREATE INDEX ON kept_updated_at (updated_at);
CREATE FUNCTION set_updated_at() RETURNS trigger LANGUAGE plpgsql AS \$\$
BEGIN NEW.updated_at := now(); RETURN NEW; END \$\$;
CREATE TRIGGER set_updated_at BEFORE INSERT OR UPDATE ON kept_updated_at
    FOR EACH ROW EXECUTE FUNCTION set_updated_at();
INSERT INTO kept_tracked (k) SELECT g FROM generate_series(1, $keys) AS g;
INSERT INTO kept_updated_at (k) SELECT g FROM generate_series(1, $keys) AS g;
CREATE SEQUENCE next_k START $keys;
VACUUM ANALYZE kept_tracked, kept_updated_at;));
    my $seconds = 5;
    my %statements = (
        insert => q(INSERT INTO kept_%s (k, note) VALUES (nextval('next_k') + 1, 'x')),
        update => "\\set k random(1, $keys)\nUPDATE kept_%s SET n = n + 1 WHERE k = :k",
    );
    my %tps;
    for my $run (1 .. $repetitions) {
        for my $statement (qw(insert update)) {
            for my $clients (1, 8) {
                my @order = $run % 2 ? qw(tracked updated_at) : qw(updated_at tracked);
                push @{ $tps{"$statement $clients"}{$_} }, pgbench_tps($node, '-c', $clients,
                    '-j', min($clients, 2), '-T', $seconds, '-f',
                    script('kept', sprintf($statements{$statement}, $_))) for @order;
            }
        }
    }
    say_out("## 15. Following changes\n\n",
        "A tracked table (`snowflake_track_changes()`) against the same table kept by a PL/pgSQL ",
        "trigger `NEW.updated_at := now()` with an index on `updated_at`, both keyed by ",
        "`snowflake_nextval()` with a unique `k` of $keys rows. pgbench, $seconds s per run, ",
        "$repetitions runs of each in alternating order, medians.\n\n");
    table([ 'statement', 'clients', 'tracked tps', 'updated_at tps', 'tracked / updated_at' ], map {
        my ($statement, $clients) = split / /;
        my ($tracked, $plain) = (median(@{ $tps{$_}{tracked} }), median(@{ $tps{$_}{updated_at} }));
        [ $statement, $clients, fmt('%.0f', $tracked), fmt('%.0f', $plain),
          fmt('%.3f', $tracked / $plain) ]
    } 'insert 1', 'insert 8', 'update 1', 'update 8');

    # Paging: every change of a tracked table of $rows rows, against every row of a table by id.
    $node->safe_psql('postgres', qq(
CREATE TABLE paged_changes (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), note text);
SELECT snowflake_track_changes('paged_changes');
INSERT INTO paged_changes (note) SELECT 'x' FROM generate_series(1, $rows);
CREATE TABLE paged_rows (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), note text);
INSERT INTO paged_rows (note) SELECT 'x' FROM generate_series(1, $rows);
VACUUM ANALYZE paged_changes, paged_rows;
CREATE FUNCTION page_changes() RETURNS bigint LANGUAGE plpgsql AS \$\$
DECLARE cursor_at bigint := 0; next_at bigint; total bigint := 0; got integer;
BEGIN
    LOOP
        SELECT count(*) FILTER (WHERE kind <> 'next'), max(version) FILTER (WHERE kind = 'next')
        INTO got, next_at FROM snowflake_changes(NULL::paged_changes, cursor_at, 1000);
        total := total + got;
        EXIT WHEN got < 1000;
        cursor_at := next_at;
    END LOOP;
    RETURN total;
END \$\$;
CREATE FUNCTION page_rows() RETURNS bigint LANGUAGE plpgsql AS \$\$
DECLARE cursor_at bigint := 0; last_at bigint; total bigint := 0; got integer;
BEGIN
    LOOP
        SELECT count(*), max(id) INTO got, last_at
        FROM snowflake_settled_rows(NULL::paged_rows, cursor_at, 1000);
        total := total + got;
        EXIT WHEN got < 1000;
        cursor_at := last_at + 1;
    END LOOP;
    RETURN total;
END \$\$;));
    my $session = open_session($node);
    my (%page_ms, %counted);
    for my $run (1 .. $repetitions) {
        for my $function (qw(page_changes page_rows)) {
            my ($result, $ms) = timed($session, "SELECT $function()");
            push @{ $page_ms{$function} }, $ms;
            $counted{$function} = $result->[0];
        }
    }
    my ($changes_ms, $rows_ms) = map { median(@{ $page_ms{$_} }) } qw(page_changes page_rows);
    say_out(sprintf("Paging in pages of 1,000 (PL/pgSQL loops in one call, $repetitions runs, "
        . "medians): %s changes with `snowflake_changes()` in %.0f ms, %s rows with "
        . "`snowflake_settled_rows()` in %.0f ms: %.2f times as long.\n\n",
        $counted{page_changes}, $changes_ms, $counted{page_rows}, $rows_ms, $changes_ms / $rows_ms));

    # The time from a row's insert (its made_at, a clock reading before its commit) to its read.
    $node->safe_psql('postgres', q(
CREATE TABLE followed (id bigint PRIMARY KEY DEFAULT snowflake_nextval(),
                       made_at timestamptz NOT NULL DEFAULT clock_timestamp());
SELECT snowflake_track_changes('followed');));
    my $writers = IPC::Run::start(pgbench_command($node, '-c', 8, '-j', 2, '-T', 10, '-f',
            script('followed', 'INSERT INTO followed DEFAULT VALUES')), '>', \my $out, '2>', \my $err);
    my ($cursor, @lag_ms) = ($node->safe_psql('postgres', 'SELECT snowflake_settled_bound()'));
    while ($writers->pumpable) {
        my ($lines) = timed($session, "SELECT kind, version, extract(epoch FROM clock_timestamp() "
            . "- (data).made_at) * 1000 FROM snowflake_changes(NULL::followed, $cursor, 100000)");
        for (@$lines) {
            my ($kind, $version, $lag) = split /\|/;
            if ($kind eq 'next') { $cursor = $version; }
            else { push @lag_ms, $lag; }
        }
        sleep 0.01;
        $writers->pump_nb;
    }
    $writers->finish;
    $session->quit;
    say_out(sprintf("From insert to read, a reader polling every 10 ms under 8 pgbench writers "
        . "of single-row inserts (10 s, %d rows read): p50 %.1f ms, p99 %.1f ms, max %.1f ms.\n\n",
        scalar(@lag_ms), percentile(0.5, @lag_ms), percentile(0.99, @lag_ms), max(@lag_ms)));
}

# Runs the selected cases on one preloaded server (cases 7 and 9 start more).
sub run_cases {
my $started = time;
my $node = bench_server('bench');
open my $cpuinfo, '<', '/proc/cpuinfo' or die $!;
my ($machine) = map { /^model name\s*:\s*(.*)$/ ? $1 : () } <$cpuinfo>;
close $cpuinfo;
chomp(my $debian = `cat /etc/debian_version`);
my ($server_version) = run_command([ 'postgres', '--version' ]);
say_out("# snowflake benchmarks\n\n",
    "Machine: $machine, $cores cores, Debian $debian, $server_version.\n\n");
my @cases = (\&bulk_generation, \&concurrency, \&inserts, \&decoding, \&time_range, \&core,
    \&servers, \&conversion, \&hook_cost, \&type_cost, \&partition_maintenance, \&floor_read,
    \&uuid_keys, \&settled_cost, \&following_changes);
for my $number (1 .. @cases) {
    $cases[ $number - 1 ]->($node) if $selected{$number};
}
$node->stop;
say_out(sprintf("Total time: %.0f s\n", time - $started));
}

eval { run_cases(); 1 } or do {
    print {$errors} "benchmark failed: $@";
    exit 1;
};
