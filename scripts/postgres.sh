#!/usr/bin/env bash
# A private PostgreSQL server on this machine for shared Optuna studies (lit_rl.tune workers) and their tests.
#
#   scripts/postgres.sh install   # Debian's postgresql (root + apt); nothing when already there
#   scripts/postgres.sh start     # initdb (first time) + pg_ctl start on 127.0.0.1:$PORT; creates database lit_rl
#   scripts/postgres.sh url       # the SQLAlchemy URL, e.g. postgresql://postgres@127.0.0.1:55432/lit_rl
#   scripts/postgres.sh status    # exit 0 when the server accepts connections
#   scripts/postgres.sh stop      # stop the server (data stays in $LIT_RL_POSTGRES_DIR)
#
# The cluster lives in $LIT_RL_POSTGRES_DIR (default /tmp/lit_rl_postgres), listens on loopback only
# ($LIT_RL_POSTGRES_PORT, default 55432) with trust authentication: a test and single-user server, not
# one to expose. As root the server runs as the `postgres` user (PostgreSQL refuses to run as root);
# otherwise as the calling user. For workers on other nodes, use your site's PostgreSQL server instead.
set -euo pipefail

DIR=${LIT_RL_POSTGRES_DIR:-/tmp/lit_rl_postgres}
PORT=${LIT_RL_POSTGRES_PORT:-55432}
DB=${LIT_RL_POSTGRES_DB:-lit_rl}
HOST=127.0.0.1

bindir() {
    local dir
    dir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
    if [ -z "$dir" ] && command -v pg_config >/dev/null; then dir=$(pg_config --bindir); fi
    [ -n "$dir" ] && [ -x "$dir/initdb" ] && echo "$dir"
}

install() {
    if bindir >/dev/null; then return 0; fi
    if [ "$(id -u)" != 0 ]; then
        echo "scripts/postgres.sh install: PostgreSQL is not installed and installing it needs root (apt); running as $(id -un)" >&2
        exit 2
    fi
    command -v apt-get >/dev/null || { echo "scripts/postgres.sh install: no apt-get on this machine" >&2; exit 2; }
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql >/dev/null
}

# Run a PostgreSQL binary as the server's user.
as_owner() {
    if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

status() {
    "$(bindir)/pg_isready" -q -h "$HOST" -p "$PORT"
}

start() {
    install
    local bin
    bin=$(bindir)
    # One start at a time: processes (test workers) that start the server together would each run initdb.
    exec 9>"$DIR.start.lock"
    flock 9
    if status; then
        echo "postgres: already running on $HOST:$PORT ($DIR)"
    else
        mkdir -p "$DIR"
        [ "$(id -u)" = 0 ] && chown postgres:postgres "$DIR"
        if [ ! -f "$DIR/data/PG_VERSION" ]; then
            as_owner "$bin/initdb" -D "$DIR/data" -U postgres --auth=trust -E UTF8 >"$DIR/initdb.log"
        fi
        # Unix socket in $DIR: /var/run/postgresql belongs to the system's own server.
        # 9>&-: the server must not inherit (and hold) the start lock.
        as_owner "$bin/pg_ctl" -D "$DIR/data" -l "$DIR/server.log" -w -t 60 \
            -o "-p $PORT -k $DIR -c listen_addresses=$HOST -c max_connections=200" start >/dev/null 9>&- ||
            { echo "postgres: the server did not start; see $DIR/server.log" >&2; tail -20 "$DIR/server.log" >&2; exit 1; }
    fi
    if ! as_owner "$bin/psql" -h "$HOST" -p "$PORT" -U postgres -tAc "SELECT 1 FROM pg_database WHERE datname='$DB'" | grep -q 1; then
        as_owner "$bin/createdb" -h "$HOST" -p "$PORT" -U postgres "$DB"
    fi
    echo "postgres: up on $HOST:$PORT, database $DB; url $(url)"
}

stop() {
    local bin
    bin=$(bindir) || { echo "postgres: not installed"; return 0; }
    if [ -f "$DIR/data/postmaster.pid" ]; then
        as_owner "$bin/pg_ctl" -D "$DIR/data" -m fast -w stop >/dev/null
    fi
    echo "postgres: stopped"
}

url() {
    echo "postgresql://postgres@$HOST:$PORT/$DB"
}

case "${1:-}" in
install) install ;;
start) start ;;
stop) stop ;;
url) url ;;
status) status && echo "postgres: up on $HOST:$PORT" || { echo "postgres: not running on $HOST:$PORT" >&2; exit 1; } ;;
*) echo "usage: scripts/postgres.sh install|start|status|url|stop" >&2; exit 2 ;;
esac
