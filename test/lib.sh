# Shared by test/demo and test/check-all: installing what they need, and running servers as an
# unprivileged user (PostgreSQL refuses to run as root).

readonly PG_MAJOR=15
readonly PG_BINDIR=/usr/lib/postgresql/$PG_MAJOR/bin
readonly SERVER_USER=postgres
readonly APT_PACKAGES=(
    make g++ clang-14 libclang-rt-14-dev
    postgresql-$PG_MAJOR postgresql-server-dev-$PG_MAJOR
    libgtest-dev libipc-run-perl libfaketime
)

# Runs a command as root, through sudo when the caller is not root already.
as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# Installs those of APT_PACKAGES and of the given extra packages that are missing; does nothing
# when all are present.
install_dependencies() {
    local missing=()
    for package in "${APT_PACKAGES[@]}" "$@"; do
        dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
            missing+=("$package")
    done
    if [ "${#missing[@]}" -gt 0 ]; then
        echo "Installing: ${missing[*]}"
        as_root apt-get update -qq
        as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
            "${missing[@]}" >/dev/null
    fi
}

# Builds the extension and installs it into the PostgreSQL $PG_MAJOR installation.
build_and_install() {
    local source_dir=$1
    make -C "$source_dir" -s -j2 PG_CONFIG="$PG_BINDIR/pg_config"
    as_root make -C "$source_dir" -s install PG_CONFIG="$PG_BINDIR/pg_config"
}

# Runs a command as the server user when we are root, so that initdb and postgres accept it.
as_server_user() {
    if [ "$(id -u)" -eq 0 ]; then
        runuser -u "$SERVER_USER" -- env PATH="$PG_BINDIR:$PATH" "$@"
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
