# Shared by test/demo, test/check-all and test/bench/run: installing what they need, choosing the
# PostgreSQL to test, and running servers as an unprivileged user (PostgreSQL refuses to run as
# root).
#
# PG_CONFIG may name the pg_config of any installed PostgreSQL 15 or later; without it, Debian's
# PostgreSQL 15 is installed from the package registry and used.

# Sourced once: the settings below are read-only.
[ -n "${SNOWFLAKE_TEST_LIB:-}" ] && return 0
readonly SNOWFLAKE_TEST_LIB=1
readonly DEBIAN_PG_MAJOR=15
readonly DEBIAN_PG_CONFIG=/usr/lib/postgresql/$DEBIAN_PG_MAJOR/bin/pg_config
PG_CONFIG=${PG_CONFIG:-$DEBIAN_PG_CONFIG}
readonly SERVER_USER=postgres
APT_PACKAGES=(make gcc g++ git clang-14 libclang-rt-14-dev libgtest-dev libipc-run-perl libfaketime
    pgxnclient python3-psycopg python3-django python3-psycopg2 python3-alembic ruby-activerecord
    ruby-pg libpostgresql-jdbc-java default-jdk-headless)
if [ "$PG_CONFIG" = "$DEBIAN_PG_CONFIG" ]; then
    # pg_cron, Debian's build for its PostgreSQL only: test/t/025_partitions.pl runs the README's
    # scheduled maintenance with it (and skips where it is not installed).
    APT_PACKAGES+=(postgresql-$DEBIAN_PG_MAJOR postgresql-server-dev-$DEBIAN_PG_MAJOR
        postgresql-$DEBIAN_PG_MAJOR-cron)
fi
readonly APT_PACKAGES

# Runs a command as root, through sudo when the caller is not root already.
as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# Those of APT_PACKAGES and of the given extra packages that are missing, one a line.
missing_packages() {
    for package in "${APT_PACKAGES[@]}" "$@"; do
        dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
            echo "$package"
    done
    # Node.js may come from another source than Debian's packages, whose npm would conflict.
    command -v npm >/dev/null || printf '%s\n' nodejs npm
}

# Installs those of APT_PACKAGES and of the given extra packages that are missing; does nothing
# when all are present. Then settles which PostgreSQL is tested and says so.
install_dependencies() {
    local missing
    mapfile -t missing < <(missing_packages "$@")
    if [ "${#missing[@]}" -gt 0 ]; then
        echo "Installing: ${missing[*]}"
        as_root apt-get update -qq
        as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
            "${missing[@]}" >/dev/null
    fi
    settle_postgresql
}

# The same without installing: names the missing packages, which a layer may then need, and goes
# on.
check_dependencies() {
    local missing
    mapfile -t missing < <(missing_packages "$@")
    if [ "${#missing[@]}" -gt 0 ]; then
        echo "Not installed (--no-install): ${missing[*]}; a layer that needs one fails"
    fi
    settle_postgresql
}

# Settles which PostgreSQL is tested and says so.
settle_postgresql() {
    if ! PG_BINDIR=$("$PG_CONFIG" --bindir); then
        echo "PG_CONFIG=$PG_CONFIG is not a working pg_config" >&2
        return 1
    fi
    # A PostgreSQL unpacked elsewhere than the prefix it was built for (../shared/pg/) would
    # otherwise load the system's older libpq, which lacks functions its psql calls.
    LD_LIBRARY_PATH="$("$PG_CONFIG" --libdir)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export LD_LIBRARY_PATH
    echo "Testing against $("$PG_BINDIR/postgres" --version) ($PG_CONFIG)"
}

# Builds the extension and installs it into the PostgreSQL that PG_CONFIG names, first removing
# the scripts an earlier version installed there, whose names this version's make uninstall
# may not know (up to 1.9 a complete script of each version was installed).
build_and_install() {
    local source_dir=$1
    make -C "$source_dir" -s -j2 PG_CONFIG="$PG_CONFIG" || return 1
    as_root find "$("$PG_CONFIG" --sharedir)/extension" -maxdepth 1 -name 'snowflake--*.sql' \
        -delete
    as_root make -C "$source_dir" -s install PG_CONFIG="$PG_CONFIG"
}

# Runs a command as the server user when we are root, so that initdb and postgres accept it.
as_server_user() {
    if [ "$(id -u)" -eq 0 ]; then
        runuser -u "$SERVER_USER" -- env PATH="$PG_BINDIR:$PATH" \
            LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}" "$@"
    else
        env PATH="$PG_BINDIR:$PATH" "$@"
    fi
}

# A scratch directory the server user can write, removed when the script exits.
make_scratch_dir() {
    local dir
    dir=$(mktemp -d /tmp/snowflake.XXXXXX)
    chmod 755 "$dir"
    if [ "$(id -u)" -eq 0 ]; then chown "$SERVER_USER" "$dir"; fi
    echo "$dir"
}

# Starts a throwaway server with the extension preloaded (node ids 7 and 13), its data in $1/data,
# listening on a socket in $1 on port $2; with a loopback address in $3 also on TCP, where the
# password in the file $4 is asked for. $1 must belong to the server user.
start_throwaway_server() {
    local dir=$1 port=$2 listen=${3:-} password_file=${4:-}
    local authentication=(-A trust)
    if [ -n "$listen" ]; then
        authentication=(--auth-local=trust --auth-host=scram-sha-256 --pwfile="$password_file")
    fi
    as_server_user initdb -D "$dir/data" "${authentication[@]}" >/dev/null || return 1
    cat >>"$dir/data/postgresql.conf" <<CONF
listen_addresses = '$listen'
port = $port
unix_socket_directories = '$dir'
shared_preload_libraries = 'snowflake'
snowflake.datacenter_id = 7
snowflake.machine_id = 13
CONF
    as_server_user pg_ctl -D "$dir/data" -l "$dir/server.log" -w start >/dev/null
}

# Stops a server that start_throwaway_server started, if it runs.
stop_throwaway_server() {
    as_server_user pg_ctl -D "$1/data" -m fast stop >/dev/null 2>&1 || true
}
