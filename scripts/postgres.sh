#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the tests: `scripts/postgres.sh start DIR` creates one in DIR
# (a fresh temp dir), starts it on a free local port and prints the admin URL
# (postgres://tackle@127.0.0.1:PORT/postgres, trust authentication, local only) that tests read
# from TACKLE_TEST_DATABASE_URL; each test creates its own database there.
# `scripts/postgres.sh stop DIR` stops it and removes DIR. initdb refuses to run as root, so as
# root the cluster belongs to the `postgres` user (Debian's package creates it).
set -euo pipefail

bindir() {
  local dir
  if dir="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)" && [ -x "$dir/initdb" ]; then
    echo "$dir"
  elif command -v initdb >/dev/null; then
    dirname "$(command -v initdb)"
  else
    echo "postgres.sh: no PostgreSQL server binaries (initdb); run scripts/test-deps.sh" >&2
    exit 2
  fi
}

as_owner() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

cmd="${1:-}"
dir="${2:-}"
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "usage: $0 start|stop DIR" >&2; exit 2; }
bin="$(bindir)"

case "$cmd" in
  start)
    mkdir -p "$dir"
    if [ "$(id -u)" = 0 ]; then
      chown postgres: "$dir"
      runuser -u postgres -- test -x "$dir" ||
        { echo "postgres.sh: the postgres user cannot reach $dir; use a directory under a world-searchable parent (e.g. mktemp -d, then chmod 755)" >&2; exit 2; }
    fi
    chmod 700 "$dir"
    as_owner "$bin/initdb" -D "$dir/data" -U tackle -A trust -E UTF8 --no-sync >"$dir/initdb.log" 2>&1 ||
      { cat "$dir/initdb.log" >&2; exit 1; }
    port="$(free_port)"
    # fsync off: a test cluster need not survive a power cut, and it makes every commit cheap.
    as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
      -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=400" start >/dev/null ||
      { cat "$dir/server.log" >&2; exit 1; }
    echo "postgres://tackle@127.0.0.1:$port/postgres"
    ;;
  stop)
    [ -d "$dir/data" ] && as_owner "$bin/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$dir"
    ;;
  *) echo "usage: $0 start|stop DIR" >&2; exit 2 ;;
esac
