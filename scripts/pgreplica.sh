#!/usr/bin/env bash
# A PostgreSQL primary and a streaming hot-standby replica on loopback with private data dirs, for the
# dbresolver tests.
#
#   scripts/pgreplica.sh start    initdb the primary, pg_basebackup -R the replica, wait until it streams (no-op if so)
#   scripts/pgreplica.sh stop     stop both servers (pg_ctl, by their data dirs' PIDs)
#   scripts/pgreplica.sh status   print both servers' state; exit 1 unless the replica is streaming
#   scripts/pgreplica.sh env      print the exports of SLOTTED_PG_PRIMARY_DSN and SLOTTED_PG_REPLICA_DSN
#
# A pair that is not healthy (a server down, leftovers of a crash) is stopped and rebuilt from scratch: its data is
# disposable test data. The shared server on 5432 is never touched.
#
# Settings (environment): SLOTTED_CLUSTERS_DIR (default /var/tmp/slotted-clusters), SLOTTED_PG_PRIMARY_PORT (5441),
# SLOTTED_PG_REPLICA_PORT (5442), SLOTTED_PG_DB (slotted_test), SLOTTED_PG_BIN (/usr/lib/postgresql/15/bin).
set -euo pipefail

root=${SLOTTED_CLUSTERS_DIR:-/var/tmp/slotted-clusters}/pg
primary_port=${SLOTTED_PG_PRIMARY_PORT:-5441}
replica_port=${SLOTTED_PG_REPLICA_PORT:-5442}
db=${SLOTTED_PG_DB:-slotted_test}
bin=${SLOTTED_PG_BIN:-/usr/lib/postgresql/15/bin}
primary=$root/primary
replica=$root/replica

fail() {
	printf 'pgreplica: %s\n' "$*" >&2
	exit 1
}
log() { printf 'pgreplica: %s\n' "$*" >&2; }

# as_pg CMD...: run CMD as the postgres user when root (initdb and postgres refuse to run as root).
as_pg() {
	if [ "$(id -u)" = 0 ]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

# q PORT SQL: run SQL on the server at PORT, unaligned, no headers.
q() {
	PGCONNECT_TIMEOUT=2 "$bin/psql" -X -w -q -tA -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$1" -U postgres -d postgres -c "$2"
}

tail_log() {
	if [ -f "$1/server.log" ]; then
		echo "---- last lines of $1/server.log ----" >&2
		tail -n 40 "$1/server.log" >&2
		echo "----" >&2
	fi
}

streaming() {
	[ "$(q "$primary_port" "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'" 2>/dev/null)" = 1 ] &&
		[ "$(q "$replica_port" "SELECT pg_is_in_recovery()" 2>/dev/null)" = t ]
}

# pg_start DIR: start the server in DIR and wait (bounded) until it accepts connections.
pg_start() {
	as_pg "$bin/pg_ctl" -D "$1" -l "$1/server.log" -w -t 60 start >/dev/null || {
		tail_log "$1"
		fail "server in $1 did not start within 60 s"
	}
}

# pg_stop DIR: stop the server whose postmaster.pid is in DIR, if it runs: fast, then immediate, then SIGKILL.
# Returns 1 if there was nothing to stop.
pg_stop() {
	local d=$1 pid
	[ -f "$d/postmaster.pid" ] || return 1
	pid=$(head -n 1 "$d/postmaster.pid")
	# Only a postgres whose command line names this data dir is ours.
	if ! { tr '\0' ' ' <"/proc/$pid/cmdline"; } 2>/dev/null | grep -qF -- "$d"; then
		return 1
	fi
	as_pg "$bin/pg_ctl" -D "$d" -m fast -w -t 30 stop >/dev/null 2>&1 ||
		as_pg "$bin/pg_ctl" -D "$d" -m immediate -w -t 30 stop >/dev/null 2>&1 ||
		kill -KILL "$pid" 2>/dev/null || true
}

cmd_stop() {
	local stopped=""
	pg_stop "$replica" && stopped+=" replica"
	pg_stop "$primary" && stopped+=" primary"
	[ -z "$stopped" ] || log "stopped:$stopped"
}

cmd_start() {
	local t0=$SECONDS deadline
	[ -x "$bin/initdb" ] || fail "$bin/initdb not found (apt-get install postgresql-15)"
	if streaming; then
		log "already running, replica streaming"
		return 0
	fi
	cmd_stop
	rm -rf "$root"
	mkdir -p "$primary"
	chmod 755 "$(dirname "$root")"
	if [ "$(id -u)" = 0 ]; then chown -R postgres:postgres "$root"; fi
	chmod 700 "$primary"

	as_pg "$bin/initdb" -D "$primary" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >"$root/initdb.log" 2>&1 || {
		tail -n 40 "$root/initdb.log" >&2
		fail "initdb failed"
	}
	# initdb --auth=trust already trusts loopback, replication connections included.
	as_pg tee -a "$primary/postgresql.conf" >/dev/null <<EOF
port = $primary_port
listen_addresses = '127.0.0.1'
unix_socket_directories = '$root'
wal_level = replica
max_wal_senders = 5
max_replication_slots = 5
hot_standby = on
shared_buffers = 64MB
max_connections = 200
# Disposable test servers: no fsync.
fsync = off
EOF
	pg_start "$primary"
	q "$primary_port" "CREATE DATABASE \"$db\"" >/dev/null

	# A physical slot keeps the WAL a paused or slow replica still needs.
	as_pg "$bin/pg_basebackup" -h 127.0.0.1 -p "$primary_port" -U postgres -D "$replica" -R -X stream -c fast \
		-C -S slotted_replica >"$root/basebackup.log" 2>&1 || {
		tail -n 40 "$root/basebackup.log" >&2
		fail "pg_basebackup failed"
	}
	as_pg tee -a "$replica/postgresql.conf" >/dev/null <<EOF
port = $replica_port
hot_standby = on
EOF
	pg_start "$replica"

	deadline=$((SECONDS + 60))
	until streaming; do
		if [ $SECONDS -ge $deadline ]; then
			tail_log "$replica"
			fail "replica not streaming within 60 s"
		fi
		sleep 0.5
	done
	log "primary on $primary_port, replica on $replica_port streaming, database $db ready, in $((SECONDS - t0)) s"
}

cmd_status() {
	local p r s
	p=$(q "$primary_port" "SELECT 'up'" 2>/dev/null || echo down)
	r=$(q "$replica_port" "SELECT CASE WHEN pg_is_in_recovery() THEN 'standby' ELSE 'not in recovery' END" 2>/dev/null || echo down)
	s=$(q "$primary_port" "SELECT string_agg(state, ',') FROM pg_stat_replication" 2>/dev/null || true)
	echo "primary port $primary_port: $p (replication: ${s:-none})"
	echo "replica port $replica_port: $r"
	streaming
}

cmd_env() {
	echo "export SLOTTED_PG_PRIMARY_DSN='host=127.0.0.1 port=$primary_port user=postgres dbname=$db sslmode=disable'"
	echo "export SLOTTED_PG_REPLICA_DSN='host=127.0.0.1 port=$replica_port user=postgres dbname=$db sslmode=disable'"
}

case ${1:-} in
start) cmd_start ;;
stop) cmd_stop ;;
status) cmd_status ;;
env) cmd_env ;;
*)
	echo "usage: $0 {start|stop|status|env}" >&2
	exit 2
	;;
esac
