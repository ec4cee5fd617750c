#!/usr/bin/env bash
# Two PgBouncer instances on loopback in front of a PostgreSQL server, for the pooler tests: one in transaction
# mode, one in session mode.
#
#   scripts/pgbouncer.sh start    write their configs, start both (no-op for one already answering)
#   scripts/pgbouncer.sh stop     stop both (by their pid files)
#   scripts/pgbouncer.sh status   exit 1 unless both answer
#   scripts/pgbouncer.sh env      print the exports of SLOTTED_PGBOUNCER_TX_DSN and SLOTTED_PGBOUNCER_SESSION_DSN
#
# Needs the pgbouncer binary (Debian: apt-get install pgbouncer). Auth is trust for user postgres, on loopback only:
# test data. Settings (environment): SLOTTED_PGBOUNCER_DIR (default /var/tmp/slotted-pgbouncer),
# SLOTTED_PGBOUNCER_TX_PORT (6411), SLOTTED_PGBOUNCER_SESSION_PORT (6412), SLOTTED_PGBOUNCER_DB (slotted_test),
# SLOTTED_PGBOUNCER_UPSTREAM (host=127.0.0.1 port=5432).
set -euo pipefail

dir=${SLOTTED_PGBOUNCER_DIR:-/var/tmp/slotted-pgbouncer}
tx_port=${SLOTTED_PGBOUNCER_TX_PORT:-6411}
session_port=${SLOTTED_PGBOUNCER_SESSION_PORT:-6412}
db=${SLOTTED_PGBOUNCER_DB:-slotted_test}
upstream=${SLOTTED_PGBOUNCER_UPSTREAM:-host=127.0.0.1 port=5432}
bin=${SLOTTED_PGBOUNCER_BIN:-$(command -v pgbouncer || echo /usr/sbin/pgbouncer)}

fail() {
	printf 'pgbouncer.sh: %s\n' "$*" >&2
	exit 1
}

# as_pg CMD...: run CMD as the postgres user when root (pgbouncer refuses to run as root).
as_pg() {
	if [ "$(id -u)" = 0 ]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

answers() { PGCONNECT_TIMEOUT=2 psql -X -w -q -tA -h 127.0.0.1 -p "$1" -U postgres -d "$db" -c 'SELECT 1' >/dev/null 2>&1; }

# config MODE PORT: the ini of one instance.
config() {
	cat <<INI
[databases]
$db = $upstream dbname=$db

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $2
unix_socket_dir =
auth_type = trust
auth_file = $dir/userlist.txt
pool_mode = $1
; Small server pools: PostgreSQL's max_connections is shared. Session mode gives each client a server connection of
; its own, so its pool must hold every client of the tests (two pools of at most 8).
default_pool_size = $([ "$1" = session ] && echo 24 || echo 8)
max_client_conn = 400
ignore_startup_parameters = extra_float_digits
pidfile = $dir/$1.pid
logfile = $dir/$1.log
INI
}

start_one() { # MODE PORT
	if answers "$2"; then
		echo "pgbouncer.sh: $1 mode on $2 already answers" >&2
		return
	fi
	stop_one "$1"
	config "$1" "$2" >"$dir/$1.ini"
	chown postgres "$dir/$1.ini"
	as_pg "$bin" -d "$dir/$1.ini" || fail "pgbouncer ($1 mode) did not start; see $dir/$1.log"
	for _ in $(seq 60); do
		answers "$2" && return
		sleep 0.5
	done
	tail -n 20 "$dir/$1.log" >&2 || true
	fail "pgbouncer ($1 mode) on port $2 did not answer within 30 s"
}

stop_one() { # MODE
	local pidfile=$dir/$1.pid pid
	[ -f "$pidfile" ] || return 0
	pid=$(cat "$pidfile")
	if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
		kill "$pid"
		for _ in $(seq 40); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.25
		done
	fi
	rm -f "$pidfile"
}

dsn() { echo "host=127.0.0.1 port=$1 user=postgres dbname=$db sslmode=disable"; }

case ${1:-} in
start)
	[ -x "$bin" ] || fail "no pgbouncer binary ($bin); apt-get install pgbouncer"
	mkdir -p "$dir"
	echo '"postgres" ""' >"$dir/userlist.txt"
	chown -R postgres "$dir" 2>/dev/null || true
	start_one transaction "$tx_port"
	start_one session "$session_port"
	;;
stop)
	stop_one transaction
	stop_one session
	;;
status)
	answers "$tx_port" && answers "$session_port"
	;;
env)
	echo "export SLOTTED_PGBOUNCER_TX_DSN='$(dsn "$tx_port")'"
	echo "export SLOTTED_PGBOUNCER_SESSION_DSN='$(dsn "$session_port")'"
	;;
*)
	fail "usage: $0 start|stop|status|env"
	;;
esac
