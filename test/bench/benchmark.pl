#!/usr/bin/env perl
# The benchmark suite: starts a throwaway server with the extension preloaded, runs every case with
# the alternatives interleaved, each at least five times, and prints Markdown tables of medians and
# ratios. Run through test/bench/run, which builds and installs first. Timings come from psql's
# \timing; CPU time of a backend from /proc/PID/schedstat (nanoseconds on a CPU).
use strict;
use warnings;
use File::Temp qw(tempdir);
use IO::Select;
use IPC::Open2;
use List::Util qw(max min sum);
use POSIX qw(floor);
use Time::HiRes qw(time sleep);

my $core_bench = shift @ARGV;
my $repetitions = $ENV{BENCH_REPETITIONS} // 5;
# A comma-separated list of case numbers to run, for working on one case; all by default.
my %selected = map { $_ => 1 } split /,/, ($ENV{BENCH_CASES} // '1,2,3,4,5,6,7,8,9');
my $ceiling_ids_per_ms = 4096;
my $work_dir = tempdir('snowflake-bench-XXXXXX', TMPDIR => 1, CLEANUP => 1);
my $port = 54331;
my $data_dir = "$work_dir/data";
chomp(my $cores = `nproc`);
# Data directories of the servers still running, stopped on the way out even if a case dies.
my %running_servers;

# Runs a command (no shell) and returns its output, stderr included; dies if it fails.
sub run_or_die {
    my @command = @_;
    my $pid = open(my $output_fh, '-|') // die "fork: $!";
    if ($pid == 0) {
        open STDERR, '>&', \*STDOUT or die "dup: $!";
        { exec @command };
        # Not die: the child must not run the END block that stops the servers.
        print "exec $command[0]: $!\n";
        POSIX::_exit(127);
    }
    my $output = do { local $/; <$output_fh> } // '';
    close $output_fh;
    die "failed: @command\n$output" if $? != 0;
    return $output;
}

# A psql session driven line by line, so that a backend's CPU time can be read around a statement.
package Session {
    sub new {
        my ($class, $server_port) = @_;
        my $pid = IPC::Open2::open2(my $out, my $in, 'psql', '-X', '-q', '-A', '-t', '-F', '|',
            '-h', $work_dir, '-p', $server_port // $port, '-d', 'postgres', '-v',
            'ON_ERROR_STOP=1');
        $in->autoflush(1);
        my $self = bless { pid => $pid, in => $in, out => $out }, $class;
        print {$in} "\\timing on\n";
        ($self->{backend}) = $self->query('SELECT pg_backend_pid()');
        return $self;
    }

    # Sends a statement without waiting for it.
    sub send {
        my ($self, $sql) = @_;
        print { $self->{in} } "$sql;\n\\echo __END__\n";
    }

    # Reads the rows and the time of the statement sent last.
    sub receive {
        my ($self) = @_;
        my (@rows, $ms);
        while (my $line = readline $self->{out}) {
            chomp $line;
            last if $line eq '__END__';
            if ($line =~ /^Time: ([\d.]+) ms/) { $ms = $1; }
            else { push @rows, $line; }
        }
        die "psql session ended\n" unless defined $ms;
        $self->{last_ms} = $ms;
        return @rows;
    }

    sub query {
        my ($self, $sql) = @_;
        $self->send($sql);
        return $self->receive;
    }

    # The statement's time in ms, from psql's \timing.
    sub timed {
        my ($self, $sql) = @_;
        $self->query($sql);
        return $self->{last_ms};
    }

    # Nanoseconds the backend of this session has spent on a CPU.
    sub cpu_ns {
        my ($self) = @_;
        open my $fh, '<', "/proc/$self->{backend}/schedstat" or die "schedstat: $!";
        my ($ns) = split ' ', scalar <$fh>;
        return $ns;
    }

    sub close {
        my ($self) = @_;
        close $self->{in};
        waitpid $self->{pid}, 0;
    }
}

sub median {
    my @sorted = sort { $a <=> $b } @_;
    my $middle = int(@sorted / 2);
    return @sorted % 2 ? $sorted[$middle] : ($sorted[ $middle - 1 ] + $sorted[$middle]) / 2;
}

sub ceiling_ms { return $_[0] / $ceiling_ids_per_ms; }

sub table {
    my ($header, @rows) = @_;
    print '| ', join(' | ', @$header), " |\n";
    print '|', join('|', map { '---' } @$header), "|\n";
    print '| ', join(' | ', @$_), " |\n" for @rows;
    print "\n";
}

sub fmt { return sprintf($_[0], $_[1]); }

# A server of its own data directory, port and machine id, with the extension created; the
# library is preloaded unless $preload is given and false.
sub start_server {
    my ($directory, $server_port, $machine_id, $preload) = @_;
    my $preloaded = $preload // 1 ? "shared_preload_libraries = 'snowflake'" : '';
    run_or_die('initdb', '-D', $directory, '-A', 'trust', '--no-sync');
    open my $conf, '>>', "$directory/postgresql.conf" or die $!;
    print {$conf} <<"CONF";
listen_addresses = ''
port = $server_port
unix_socket_directories = '$work_dir'
$preloaded
snowflake.datacenter_id = 1
snowflake.machine_id = $machine_id
shared_buffers = '1GB'
max_wal_size = '8GB'
synchronous_commit = off
autovacuum = off
CONF
    close $conf;
    run_or_die('pg_ctl', '-D', $directory, '-l', "$directory.log", '-w', 'start');
    $running_servers{$directory} = 1;
    run_or_die('psql', '-X', '-q', '-h', $work_dir, '-p', $server_port, '-d', 'postgres', '-c',
        'CREATE EXTENSION snowflake');
}

sub stop_server {
    run_or_die('pg_ctl', '-D', $_[0], '-m', 'fast', '-w', 'stop');
    delete $running_servers{ $_[0] };
}

END {
    local $?;
    system('pg_ctl', '-D', $_, '-m', 'immediate', '-w', 'stop') for keys %running_servers;
}

# Every client runs generating statements back to back for the given time; returns the ids each
# client made (by client) and the elapsed seconds.
sub generate_for {
    my ($seconds, $chunk, @clients) = @_;
    my $statement = "SELECT count(snowflake_nextval()) FROM (SELECT generate_series(1, $chunk)) s";
    my %ids = map { ($_ => 0) } @clients;
    my $select = IO::Select->new(map { $_->{out} } @clients);
    my %by_handle = map { ($_->{out} => $_) } @clients;
    my $start = time;
    $_->send($statement) for @clients;
    my $running = @clients;
    while ($running > 0) {
        for my $handle ($select->can_read) {
            my $client = $by_handle{$handle};
            $client->receive;
            $ids{$client} += $chunk;
            if (time - $start < $seconds) {
                $client->send($statement);
            }
            else {
                $select->remove($handle);
                $running--;
            }
        }
    }
    return (\%ids, time - $start);
}

# Case 1: one statement making N ids, for snowflake and what users would write instead.
sub bulk_generation {
    my $session = Session->new;
    $session->query(<<'SQL');
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
    print "## 1. Bulk generation in one statement\n\n";
    print "`SELECT count(f) FROM (SELECT generate_series(1, N)) s`, $repetitions runs each, "
      . "interleaved; ceiling = N / 4,096 ms.\n\n";
    # One untimed run of each first, so that no timed run pays for a cold start.
    $session->query("SELECT count($_->[1]) FROM (SELECT generate_series(1, 100000)) s")
      for @alternatives;
    my @rows;
    my %cpu;
    for my $count (1_000_000, 10_000_000) {
        my %times;
        for my $run (1 .. $repetitions) {
            for my $alternative (@alternatives) {
                my ($name, $call) = @$alternative;
                my $cpu_before = $session->cpu_ns;
                push @{ $times{$name} },
                  $session->timed("SELECT count($call) FROM (SELECT generate_series(1, $count)) s");
                push @{ $cpu{$count} }, ($session->cpu_ns - $cpu_before) / 1e6
                  if $name eq 'snowflake_nextval()';
            }
        }
        my $snowflake = median(@{ $times{'snowflake_nextval()'} });
        for my $alternative (@alternatives) {
            my $name = $alternative->[0];
            my $median = median(@{ $times{$name} });
            push @rows, [ $name, $count, fmt('%.1f', $median), fmt('%.2f', min(@{ $times{$name} })),
                fmt('%.2f', max(@{ $times{$name} })), fmt('%.2f M/s', $count / $median / 1000),
                fmt('%.2f', $snowflake / $median), fmt('%.3f', $median / ceiling_ms($count)) ];
        }
    }
    table([ 'function', 'ids', 'median ms', 'min ms', 'max ms', 'rate', 'snowflake / this',
            'this / ceiling' ], @rows);

    my @fill_rows;
    for my $count (1_000_000, 10_000_000) {
        my ($full, $spanned) = split /\|/, ($session->query(<<"SQL"))[0];
SELECT count(*) FILTER (WHERE snowflake_sequence(id) = 4095),
       snowflake_unix_ms(max(id)) - snowflake_unix_ms(min(id)) + 1
FROM (SELECT snowflake_nextval() AS id FROM (SELECT generate_series(1, $count)) s) t
SQL
        push @fill_rows, [ $count, $spanned, POSIX::ceil($count / 4096), $full,
            fmt('%.1f%%', 100 * $full / $spanned) ];
    }
    print "Milliseconds the ids of one statement span, and how many of them were used to the full "
      . "4,096 (an id with sequence 4095 in it):\n\n";
    table([ 'ids', 'ms spanned', 'fewest possible', 'ms with all 4,096 used', 'full' ], @fill_rows);

    my @cpu_rows = map {
        my $count = $_;
        my $cpu_ms = median(@{ $cpu{$count} });
        [ $count, fmt('%.0f', $cpu_ms), fmt('%.0f', $cpu_ms / ($count / 1e6)),
          fmt('%.0f%%', 100 * $cpu_ms / ceiling_ms($count)) ]
    } (1_000_000, 10_000_000);
    print "CPU time of the generating backend while the ceiling binds (median of the runs above):\n\n";
    table([ 'ids', 'backend CPU ms', 'CPU ms per million ids', 'of one core during the ceiling time' ],
        @cpu_rows);
    $session->close;
}

# Case 2: 1, 2 and 4 sessions generating at once for a fixed time.
sub concurrency {
    my $seconds = 2;
    my $chunk = 100_000;
    print "## 2. Concurrent sessions\n\n";
    print "Each session runs `SELECT count(snowflake_nextval()) FROM (SELECT generate_series(1, "
      . "$chunk)) s` back to back for $seconds s; $repetitions runs each; medians.\n\n";
    my @rows;
    for my $sessions (1, 2, 4) {
        my (@totals, @slowest_shares, @cpu_per_million);
        for my $run (1 .. $repetitions) {
            my @clients = map { Session->new } 1 .. $sessions;
            my @cpu_before = map { $_->cpu_ns } @clients;
            my ($ids_by_client, $elapsed) = generate_for($seconds, $chunk, @clients);
            my %ids = %$ids_by_client;
            my $total = sum(values %ids);
            push @totals, $total / $elapsed;
            push @slowest_shares, min(map { $ids{$_} } @clients) / ($total / $sessions);
            my $cpu_ms = sum(map { ($clients[$_]->cpu_ns - $cpu_before[$_]) / 1e6 } 0 .. $#clients);
            push @cpu_per_million, $cpu_ms / ($total / 1e6);
            $_->close for @clients;
        }
        my $total = median(@totals);
        push @rows, [ $sessions, fmt('%.3f M/s', $total / 1e6),
            fmt('%.3f M/s', $total / $sessions / 1e6), fmt('%.3f', $total / 4_096_000),
            fmt('%.2f', median(@slowest_shares)), fmt('%.0f', median(@cpu_per_million)) ];
    }
    table([ 'sessions', 'total ids/s', 'per session', 'total / ceiling',
            'slowest session / fair share', 'CPU ms per million ids (all sessions)' ], @rows);
}

# Runs pgbench with a one-statement script and returns its tps.
sub pgbench_tps {
    my ($sql, $seconds) = @_;
    my $script = "$work_dir/pgbench.sql";
    open my $fh, '>', $script or die $!;
    print {$fh} "$sql;\n";
    close $fh;
    return pgbench_run($port, '-f', $script, '-T', $seconds);
}

# Runs pgbench, 2 clients, against a server and returns its tps.
sub pgbench_run {
    my ($server_port, @arguments) = @_;
    my $output = run_or_die('pgbench', '-n', '-c', '2', '-j', '2', @arguments,
        '-h', $work_dir, '-p', $server_port, 'postgres');
    my ($tps) = $output =~ /tps = ([\d.]+) \(without initial connection time\)/;
    die "no tps in pgbench output:\n$output" unless defined $tps;
    return $tps;
}

# Case 3: inserts into tables keyed three ways, and the size of their primary-key indexes.
sub inserts {
    my $session = Session->new;
    my @keys = (
        [ 'snowflake', 'id bigint PRIMARY KEY DEFAULT snowflake_nextval()' ],
        [ 'bigserial', 'id bigserial PRIMARY KEY' ],
        [ 'uuid', 'id uuid PRIMARY KEY DEFAULT gen_random_uuid()' ],
    );
    for my $key (@keys) {
        my ($name, $column) = @$key;
        $session->query("CREATE TABLE insert_$name ($column, payload text NOT NULL)");
        $session->query("CREATE TABLE sized_$name ($column, payload text NOT NULL)");
    }
    my $seconds = 3;
    print "## 3. Inserts\n\n";
    print "pgbench, 2 clients, $seconds s per run, $repetitions runs per table, interleaved; "
      . "`synchronous_commit = off`, so that the key, not the WAL flush, is what differs.\n\n";
    my @rows;
    my %tps;
    for my $mode ([ 'single row', q(INSERT INTO insert_%s (payload) VALUES ('x')) ],
        [ '1,000-row batch', q(INSERT INTO insert_%s (payload) SELECT 'x' FROM generate_series(1, 1000)) ]) {
        my ($label, $template) = @$mode;
        for my $run (1 .. $repetitions) {
            for my $key (@keys) {
                push @{ $tps{$label}{ $key->[0] } }, pgbench_tps(sprintf($template, $key->[0]), $seconds);
            }
        }
        my $bigserial = median(@{ $tps{$label}{bigserial} });
        for my $key (@keys) {
            my $median = median(@{ $tps{$label}{ $key->[0] } });
            push @rows, [ $label, $key->[0], fmt('%.0f', $median), fmt('%.3f', $median / $bigserial) ];
        }
    }
    table([ 'inserts', 'key', 'median tps', 'tps / bigserial tps' ], @rows);
    my @size_rows;
    for my $key (@keys) {
        my $name = $key->[0];
        $session->query("INSERT INTO sized_$name (payload) SELECT 'x' FROM generate_series(1, 1000000)");
        my ($bytes) = $session->query("SELECT pg_relation_size('sized_${name}_pkey')");
        push @size_rows, [ $name, fmt('%.1f MB', $bytes / 1048576) ];
    }
    print "Primary-key index after 1,000,000 rows inserted in one statement:\n\n";
    table([ 'key', 'index size' ], @size_rows);
    $session->close;
}

# Case 4: decoding 1,000,000 stored ids, against the same arithmetic in SQL.
sub decoding {
    my $session = Session->new;
    # One backend does all the work, so that the time per row is the cost per call.
    $session->query('SET max_parallel_workers_per_gather = 0');
    $session->query('CREATE TABLE stored_ids AS SELECT snowflake_nextval() AS id FROM generate_series(1, 1000000)');
    $session->query('VACUUM ANALYZE stored_ids');
    my $epoch = 1288834974657;
    my @pairs = (
        [ 'snowflake_timestamp(id)', 'max(snowflake_timestamp(id))',
          "max(to_timestamp(((id >> 22) + $epoch)::float8 / 1000))" ],
        [ 'snowflake_unix_ms(id)', 'sum(snowflake_unix_ms(id))', "sum((id >> 22) + $epoch)" ],
        [ 'snowflake_datacenter_id(id)', 'sum(snowflake_datacenter_id(id))',
          'sum(((id >> 17) & 31)::integer)' ],
        [ 'snowflake_machine_id(id)', 'sum(snowflake_machine_id(id))', 'sum(((id >> 12) & 31)::integer)' ],
        [ 'snowflake_sequence(id)', 'sum(snowflake_sequence(id))', 'sum((id & 4095)::integer)' ],
    );
    my %times;
    my $baseline_sql = 'SELECT count(id) FROM stored_ids';
    my $all_scalars = 'SELECT max(snowflake_timestamp(id)), sum(snowflake_unix_ms(id)), '
      . 'sum(snowflake_datacenter_id(id)), sum(snowflake_machine_id(id)), '
      . 'sum(snowflake_sequence(id)) FROM stored_ids';
    my $star = 'SELECT max(created_at), sum(unix_ms), sum(datacenter_id), sum(machine_id), '
      . 'sum(sequence) FROM (SELECT (snowflake_decode(id)).* FROM stored_ids) s';
    my $lateral = 'SELECT max(d.created_at), sum(d.unix_ms), sum(d.datacenter_id), '
      . 'sum(d.machine_id), sum(d.sequence) FROM stored_ids, LATERAL snowflake_decode(id) AS d';
    my $once = 'SELECT max((p).created_at), sum((p).unix_ms), sum((p).datacenter_id), '
      . 'sum((p).machine_id), sum((p).sequence) '
      . 'FROM (SELECT snowflake_decode(id) AS p FROM stored_ids OFFSET 0) s';
    # Untimed passes first, so that every timed one finds the table in shared buffers.
    $session->query($baseline_sql) for 1 .. 2;
    for my $run (1 .. $repetitions) {
        push @{ $times{baseline} }, $session->timed($baseline_sql);
        for my $pair (@pairs) {
            push @{ $times{"$pair->[0] c"} }, $session->timed("SELECT $pair->[1] FROM stored_ids");
            push @{ $times{"$pair->[0] sql"} }, $session->timed("SELECT $pair->[2] FROM stored_ids");
        }
        push @{ $times{scalars} }, $session->timed($all_scalars);
        push @{ $times{star} }, $session->timed($star);
        push @{ $times{lateral} }, $session->timed($lateral);
        push @{ $times{once} }, $session->timed($once);
    }
    print "## 4. Decoding 1,000,000 stored ids\n\n";
    print "Each function in an aggregate over the table, against the same arithmetic in SQL; "
      . "$repetitions runs, interleaved; ns per row exclude the scan (`count(id)`, "
      . fmt('%.1f', median(@{ $times{baseline} })) . " ms).\n\n";
    my $baseline = median(@{ $times{baseline} });
    my $per_row = sub { fmt('%.1f', ($_[0] - $baseline) * 1e6 / 1_000_000) };
    my @rows;
    for my $pair (@pairs) {
        my $c = median(@{ $times{"$pair->[0] c"} });
        my $sql = median(@{ $times{"$pair->[0] sql"} });
        push @rows, [ $pair->[0], fmt('%.1f', $c), fmt('%.1f', $sql), $per_row->($c), $per_row->($sql),
            fmt('%.3f', $c / $sql) ];
    }
    table([ 'function', 'median ms', 'SQL twin ms', 'ns/row', 'SQL twin ns/row', 'function / twin' ],
        @rows);
    table([ 'all five fields', 'median ms', 'ns/row' ],
        [ 'five scalar accessors', fmt('%.1f', median(@{ $times{scalars} })),
          $per_row->(median(@{ $times{scalars} })) ],
        [ '(snowflake_decode(id)).*', fmt('%.1f', median(@{ $times{star} })),
          $per_row->(median(@{ $times{star} })) ],
        [ 'LATERAL snowflake_decode(id)', fmt('%.1f', median(@{ $times{lateral} })),
          $per_row->(median(@{ $times{lateral} })) ],
        [ 'snowflake_decode(id) once, fields with (p).field', fmt('%.1f', median(@{ $times{once} })),
          $per_row->(median(@{ $times{once} })) ]);
    print "`(snowflake_decode(id)).*` calls the function once per column (PostgreSQL expands it); "
      . "`LATERAL` calls it once per row but materialises each result; selecting the row once in a "
      . "subquery and its fields with `(p).field` calls it once per row without that.\n\n";
    $session->close;
}

# Case 5: one hour out of 10,000,000 rows, by id range and by the natural predicate on the
# decoded timestamp, with the planner rewrite on and off.
sub time_range {
    my $session = Session->new;
    my $start_ms = 1764547200000;    # 2025-12-01 00:00:00 UTC
    $session->query(<<"SQL");
CREATE TABLE events (id bigint PRIMARY KEY, payload integer NOT NULL);
INSERT INTO events
SELECT snowflake_encode($start_ms + n * 86, 1, 1, 0), n FROM generate_series(0, 9999999) AS n;
VACUUM ANALYZE events
SQL
    my $from = "'2025-12-05 10:00:00+00'";
    my $to = "'2025-12-05 11:00:00+00'";
    my $natural = "SELECT count(*), sum(payload) FROM events WHERE "
      . "snowflake_timestamp(id) >= $from AND snowflake_timestamp(id) < $to";
    my %queries = (
        'id range with snowflake_min_id()' => "SELECT count(*), sum(payload) FROM events WHERE "
          . "id >= snowflake_min_id($from) AND id < snowflake_min_id($to)",
        'snowflake_timestamp(id), time_predicates on' =>
          "SET snowflake.time_predicates = on; $natural",
        'snowflake_timestamp(id), time_predicates off' =>
          "SET snowflake.time_predicates = off; $natural",
    );
    my @names = sort keys %queries;
    my %times;
    for my $run (1 .. $repetitions) {
        push @{ $times{$_} }, $session->timed($queries{$_}) for @names;
    }
    print "## 5. One hour out of 10,000,000 rows\n\n";
    my ($rows) = split /\|/, ($session->query($queries{ $names[0] }))[0];
    print "`events` holds 10,000,000 ids 86 ms apart (about 11.5 days); the hour holds $rows rows; "
      . "$repetitions runs, interleaved.\n\n";
    table([ 'predicate', 'median ms' ], map { [ $_, fmt('%.2f', median(@{ $times{$_} })) ] } @names);
    for my $name (@names) {
        (my $explain = $queries{$name}) =~ s/SELECT count/EXPLAIN (COSTS OFF) SELECT count/;
        print "Plan for $name:\n\n```\n";
        print "$_\n" for $session->query($explain);
        print "```\n\n";
    }
    $session->close;
}

# Case 6: the core alone, through Google Benchmark.
sub core {
    print "## 6. The core alone (Google Benchmark)\n\n```\n";
    print run_or_die($core_bench, '--benchmark_min_time=0.2');
    print "```\n\n";
}

# Case 7: one session on each of 1, 2 and 3 servers with distinct node ids, all at once: ids per
# second against N x 4,096,000.
sub servers {
    my $seconds = 2;
    my $chunk = 100_000;
    my @ports = ($port, $port + 1, $port + 2);
    start_server("$work_dir/data$_", $ports[ $_ - 1 ], $_) for 2, 3;
    print "## 7. Several servers at once

";
    print "One session per server, each on its own node id, generating back to back for $seconds s; "
      . "$repetitions runs each; medians. The machine has $cores cores: a generating session "
      . "sleeps while it waits for the next millisecond, so it needs only part of a core, but "
      . "with more servers than cores the total is bound by CPU as well as by the layout.\n\n";
    my @rows;
    for my $count (1, 2, 3) {
        my @totals;
        for my $run (1 .. $repetitions) {
            my @clients = map { Session->new($_) } @ports[ 0 .. $count - 1 ];
            my ($ids, $elapsed) = generate_for($seconds, $chunk, @clients);
            push @totals, sum(values %$ids) / $elapsed;
            $_->close for @clients;
        }
        my $total = median(@totals);
        push @rows, [ $count, fmt('%.3f M/s', $total / 1e6), fmt('%.3f M/s', $count * 4.096),
            fmt('%.3f', $total / ($count * 4_096_000)) ];
    }
    table([ 'servers', 'total ids/s', 'N x 4,096,000', 'total / (N x ceiling)' ], @rows);
    stop_server("$work_dir/data$_") for 2, 3;
}

# The tables of case 8, made anew: a serial key and two tables that reference it.
sub fill_order_tables {
    my ($session) = @_;
    $session->query('DROP TABLE IF EXISTS invoices, order_lines, orders');
    $session->query('CREATE TABLE orders (id serial PRIMARY KEY, note text NOT NULL)');
    $session->query('CREATE TABLE order_lines (id bigserial PRIMARY KEY, '
        . 'order_id integer NOT NULL REFERENCES orders (id), quantity integer NOT NULL)');
    $session->query('CREATE TABLE invoices (id bigserial PRIMARY KEY, '
        . 'order_id bigint NOT NULL REFERENCES orders (id))');
    $session->query(q(INSERT INTO orders (note) SELECT 'order ' || g FROM generate_series(1, 1000000) g));
    $session->query('INSERT INTO order_lines (order_id, quantity) SELECT id, 1 FROM orders');
    $session->query('INSERT INTO invoices (order_id) SELECT id FROM orders WHERE id % 2 = 0');
    $session->query('VACUUM ANALYZE orders, order_lines, invoices');
    $session->query('CHECKPOINT');
}

# Case 8: snowflake_convert_column() on a 1,000,000-row serial table referenced by 1,000,000
# integer and 500,000 bigint foreign keys, against the ALTER TABLE statements a user would write
# for the same widening; then pg_dump and pg_restore of the converted tables into a new database.
sub conversion {
    my $session = Session->new;
    my $fingerprint = q(SELECT (SELECT count(*) || ' ' || md5(string_agg(id::text, ',' ORDER BY id)) FROM orders)
        || ' ' || (SELECT count(*) || ' ' || md5(string_agg(id || ':' || order_id, ',' ORDER BY id)) FROM order_lines)
        || ' ' || (SELECT count(*) || ' ' || md5(string_agg(id || ':' || order_id, ',' ORDER BY id)) FROM invoices));
    my @ways = (
        [ 'snowflake_convert_column()', q(SELECT count(*) FROM snowflake_convert_column('orders', 'id')) ],
        # One statement, so that psql's \timing covers both.
        [ 'ALTER TABLE (widening only)', 'DO $$BEGIN ALTER TABLE orders ALTER COLUMN id TYPE bigint; '
            . 'ALTER TABLE order_lines ALTER COLUMN order_id TYPE bigint; END$$' ],
    );
    my %ms;
    for my $run (1 .. min($repetitions, 3)) {
        for my $way (@ways) {
            fill_order_tables($session);
            push @{ $ms{ $way->[0] } }, $session->timed($way->[1]);
        }
    }
    # The tables of the last conversion, dumped and restored.
    fill_order_tables($session);
    my ($before) = $session->query($fingerprint);
    my $convert_ms = $session->timed($ways[0][1]);
    my ($after) = $session->query($fingerprint);
    my $dump_file = "$work_dir/converted.dump";
    my $started = time;
    run_or_die('pg_dump', '-Fc', '-t', 'orders', '-t', 'order_lines', '-t', 'invoices', '-f',
        $dump_file, '-h', $work_dir, '-p', $port, 'postgres');
    my $dump_s = time - $started;
    $session->query('CREATE DATABASE restored');
    run_or_die('psql', '-X', '-q', '-h', $work_dir, '-p', $port, '-d', 'restored', '-c',
        'CREATE EXTENSION snowflake');
    $started = time;
    run_or_die('pg_restore', '--exit-on-error', '-j', $cores, '-h', $work_dir, '-p', $port, '-d',
        'restored', $dump_file);
    my $restore_s = time - $started;
    my @in_restored = ('psql', '-X', '-q', '-A', '-t', '-h', $work_dir, '-p', $port, '-d', 'restored', '-c');
    chomp(my $restored_fingerprint = run_or_die(@in_restored, $fingerprint));
    chomp(my $fresh = run_or_die(@in_restored,
        q(INSERT INTO orders (note) VALUES ('new') RETURNING id > 1000000)));
    $session->query('DROP DATABASE restored');
    $session->query('DROP TABLE invoices, order_lines, orders');
    $session->close;

    print "## 8. Converting a 1,000,000-row serial table\n\n";
    print "`orders` (1,000,000 rows, `serial`) referenced by `order_lines` (1,000,000 rows, "
      . "`integer`) and `invoices` (500,000 rows, `bigint`); median of "
      . min($repetitions, 3) . " runs each, interleaved, after `VACUUM ANALYZE` and `CHECKPOINT`.\n\n";
    my $alter = median(@{ $ms{ $ways[1][0] } });
    table([ 'way', 'median ms', 'ms / ALTER TABLE ms' ],
        map { [ $_->[0], fmt('%.0f', median(@{ $ms{ $_->[0] } })),
            fmt('%.2f', median(@{ $ms{ $_->[0] } }) / $alter) ] } @ways);
    table([ 'after', 'rows and key checksums (orders, order_lines, invoices)' ],
        [ 'before the conversion', "`$before`" ], [ 'after the conversion', "`$after`" ],
        [ 'after pg_dump -Fc and pg_restore', "`$restored_fingerprint`" ]);
    printf "One conversion: %.0f ms; pg_dump -Fc %.1f s, pg_restore -j %d %.1f s; a new row in the "
      . "restored database gets a Snowflake id above the old keys: %s.\n\n",
      $convert_ms, $dump_s, $cores, $restore_s, $fresh eq 't' ? 'yes' : 'no';
}

# Case 9: what the planner hook costs ordinary queries: pgbench -S (primary-key lookups, simple
# protocol, so each is planned) with the library preloaded against a server without it.
sub hook_cost {
    my $plain_port = $port + 3;
    start_server("$work_dir/plain", $plain_port, 4, 0);
    run_or_die('pgbench', '-i', '-q', '-s', '10', '-h', $work_dir, '-p', $_, 'postgres')
      for $port, $plain_port;
    my $seconds = 5;
    my %tps;
    for my $run (1 .. $repetitions) {
        for my $server ([ 'preloaded', $port ], [ 'not preloaded', $plain_port ]) {
            push @{ $tps{ $server->[0] } },
              pgbench_run($server->[1], '-S', '-M', 'simple', '-T', $seconds);
        }
    }
    stop_server("$work_dir/plain");
    run_or_die('psql', '-X', '-q', '-h', $work_dir, '-p', $port, '-d', 'postgres', '-c',
        'DROP TABLE pgbench_accounts, pgbench_branches, pgbench_history, pgbench_tellers');
    my $plain = median(@{ $tps{'not preloaded'} });
    print "## 9. The planner hook on ordinary queries\n\n";
    print "`pgbench -S -M simple`, scale 10, 2 clients, $seconds s per run, $repetitions runs per "
      . "server, interleaved; the database has the extension in both.\n\n";
    table([ 'server', 'median tps', 'tps / not preloaded' ],
        map { [ $_, fmt('%.0f', median(@{ $tps{$_} })), fmt('%.3f', median(@{ $tps{$_} }) / $plain) ] }
          'preloaded', 'not preloaded');
}

my $started = time;
start_server($data_dir, $port, 1);
open my $cpuinfo, '<', '/proc/cpuinfo' or die $!;
my ($machine) = map { /^model name\s*:\s*(.*)$/ ? $1 : () } <$cpuinfo>;
close $cpuinfo;
chomp(my $debian = `cat /etc/debian_version`);
my ($server_version) = split /\n/, run_or_die('postgres', '--version');
print "# snowflake benchmarks\n\n";
print "Machine: $machine, $cores cores, Debian $debian, $server_version.\n\n";
bulk_generation() if $selected{1};
concurrency() if $selected{2};
inserts() if $selected{3};
decoding() if $selected{4};
time_range() if $selected{5};
core() if $selected{6};
servers() if $selected{7};
conversion() if $selected{8};
hook_cost() if $selected{9};
stop_server($data_dir);
printf "Total time: %.0f s\n", time - $started;
