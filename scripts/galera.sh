#!/usr/bin/env bash
# A 3-node MariaDB Galera cluster on loopback with private data dirs, for the cluster tests.
#
#   scripts/galera.sh start    bootstrap node 1, join nodes 2 and 3, wait until all are Synced (no-op if healthy)
#   scripts/galera.sh stop     stop the three nodes by PID
#   scripts/galera.sh status   print each node's state; exit 1 unless the cluster is healthy
#   scripts/galera.sh env      print `export SLOTTED_GALERA_DSNS=...` for the tests (eval "$(scripts/galera.sh env)")
#
# A cluster that is not fully healthy (a node down, leftovers of a crash) is stopped and rebuilt from scratch:
# its data is disposable test data. Only processes started from this script's data dir are ever signalled.
#
# Settings (environment): SLOTTED_CLUSTERS_DIR (default /var/tmp/slotted-clusters), SLOTTED_GALERA_PORTS (mysqld,
# default 3311,3312,3313), SLOTTED_GALERA_GCOMM_PORTS (4571,4572,4573), SLOTTED_GALERA_IST_PORTS (4581,4582,4583),
# SLOTTED_GALERA_SST_PORTS (4591,4592,4593), SLOTTED_GALERA_DB (slotted_test).
set -euo pipefail

root=${SLOTTED_CLUSTERS_DIR:-/var/tmp/slotted-clusters}/galera
IFS=, read -r -a ports <<<"${SLOTTED_GALERA_PORTS:-3311,3312,3313}"
IFS=, read -r -a gcomm <<<"${SLOTTED_GALERA_GCOMM_PORTS:-4571,4572,4573}"
IFS=, read -r -a ist <<<"${SLOTTED_GALERA_IST_PORTS:-4581,4582,4583}"
IFS=, read -r -a sst <<<"${SLOTTED_GALERA_SST_PORTS:-4591,4592,4593}"
db=${SLOTTED_GALERA_DB:-slotted_test}
provider=${SLOTTED_GALERA_PROVIDER:-/usr/lib/galera/libgalera_smm.so}
mariadbd=${SLOTTED_MARIADBD:-/usr/sbin/mariadbd}
nodes=(1 2 3)

fail() {
	printf 'galera: %s\n' "$*" >&2
	exit 1
}
log() { printf 'galera: %s\n' "$*" >&2; }

dir() { echo "$root/node$1"; }
cnf() { echo "$(dir "$1")/my.cnf"; }
sock() { echo "$(dir "$1")/mysqld.sock"; }

# sql N QUERY: run QUERY on node N over its socket, tab-separated, no headers.
sql() {
	mariadb --no-defaults --protocol=socket --socket="$(sock "$1")" -uroot -N -B --connect-timeout=2 -e "$2"
}

# wsrep N VAR: the value of status variable VAR on node N, or nothing if it does not answer.
wsrep() { sql "$1" "SHOW GLOBAL STATUS LIKE '$2'" 2>/dev/null | cut -f2 || true; }

# pids N: PIDs of the processes started for node N (mariadbd and its rsync SST helpers), found by the node's
# private paths in their command lines, so a reused PID, another server or a `tail` of a log is never matched.
pids() {
	local d p c
	d=$(dir "$1")
	for p in /proc/[0-9]*; do
		c=$( { tr '\0' ' ' <"$p/cmdline"; } 2>/dev/null) || continue
		case $c in
		*"$d/"*) ;;
		*) continue ;;
		esac
		case $c in
		*mariadbd* | *mysqld* | *rsync* | *wsrep_sst*) echo "${p#/proc/}" ;;
		esac
	done
}

tail_log() {
	local f
	f="$(dir "$1")/error.log"
	if [ -f "$f" ]; then
		echo "---- last lines of $f ----" >&2
		tail -n 40 "$f" >&2
		echo "----" >&2
	fi
}

write_cnf() {
	local n=$1 i=$(($1 - 1)) d addrs
	d=$(dir "$n")
	addrs="127.0.0.1:${gcomm[0]},127.0.0.1:${gcomm[1]},127.0.0.1:${gcomm[2]}"
	cat >"$(cnf "$n")" <<EOF
[mysqld]
datadir = $d/data
socket = $d/mysqld.sock
pid-file = $d/mysqld.pid
log-error = $d/error.log
tmpdir = $d/tmp
port = ${ports[$i]}
bind-address = 127.0.0.1
skip-name-resolve
skip-log-bin
binlog_format = ROW
default_storage_engine = InnoDB
innodb_autoinc_lock_mode = 2
innodb_buffer_pool_size = 64M
innodb_log_file_size = 32M
# Durability comes from the three replicas; these are disposable test nodes.
innodb_flush_log_at_trx_commit = 2
max_connections = 400
wsrep_on = ON
wsrep_provider = $provider
wsrep_cluster_name = slotted
wsrep_cluster_address = gcomm://$addrs
wsrep_node_name = node$n
wsrep_node_address = 127.0.0.1:${gcomm[$i]}
wsrep_node_incoming_address = 127.0.0.1:${ports[$i]}
wsrep_sst_receive_address = 127.0.0.1:${sst[$i]}
wsrep_provider_options = "gmcast.listen_addr=tcp://127.0.0.1:${gcomm[$i]};ist.recv_addr=127.0.0.1:${ist[$i]};gcache.size=64M;pc.recovery=FALSE"
wsrep_sst_method = rsync
wsrep_slave_threads = 2

[client]
socket = $d/mysqld.sock
EOF
}

# start_node N [--wsrep-new-cluster]: launch mariadbd in the background; the caller waits.
start_node() {
	local n=$1 d
	shift
	d=$(dir "$n")
	local user=()
	if [ "$(id -u)" = 0 ]; then user=(--user=mysql); fi
	# setsid: the node must outlive this script and not get the caller's terminal signals.
	setsid "$mariadbd" --defaults-file="$(cnf "$n")" "${user[@]}" "$@" </dev/null >>"$d/stdout.log" 2>&1 &
}

# wait_synced N SECONDS: wait until node N answers and reports Synced.
wait_synced() {
	local n=$1 deadline=$((SECONDS + $2)) state=""
	while [ $SECONDS -lt $deadline ]; do
		state=$(wsrep "$n" wsrep_local_state_comment)
		[ "$state" = Synced ] && return 0
		if [ -z "$(pids "$n")" ]; then
			tail_log "$n"
			fail "node $n exited while starting (see $(dir "$n")/error.log)"
		fi
		sleep 1
	done
	tail_log "$n"
	fail "node $n not Synced within $2 s (state: ${state:-not answering})"
}

healthy() {
	local n
	for n in "${nodes[@]}"; do
		[ "$(wsrep "$n" wsrep_local_state_comment)" = Synced ] || return 1
		[ "$(wsrep "$n" wsrep_cluster_size)" = 3 ] || return 1
	done
}

# stop_node N: SIGTERM node N's processes, SIGKILL after 60 s. Returns 1 if none ran.
stop_node() {
	local n=$1 p deadline
	local ps
	ps=$(pids "$n")
	[ -n "$ps" ] || return 1
	# shellcheck disable=SC2086
	kill -TERM $ps 2>/dev/null || true
	deadline=$((SECONDS + 60))
	while [ $SECONDS -lt $deadline ]; do
		ps=$(pids "$n")
		[ -z "$ps" ] && return 0
		sleep 0.5
	done
	log "node $n did not stop within 60 s; killing $ps"
	for p in $ps; do kill -KILL "$p" 2>/dev/null || true; done
	sleep 1
}

cmd_stop() {
	local n stopped=""
	# Joiners first, the bootstrap node last, so the last one down is the most advanced.
	for n in 3 2 1; do
		if stop_node "$n"; then stopped+=" node$n"; fi
	done
	[ -z "$stopped" ] || log "stopped:$stopped"
}

prepare_dirs() {
	local n d
	rm -rf "$root"
	mkdir -p "$root"
	chmod 755 "$(dirname "$root")" "$root"
	for n in "${nodes[@]}"; do
		d=$(dir "$n")
		mkdir -p "$d/tmp"
		write_cnf "$n"
	done
	if [ "$(id -u)" = 0 ]; then chown -R mysql:mysql "$root"; fi
	# One system schema, copied to every node: joiners replace it by SST anyway, but mariadbd needs one to start.
	mariadb-install-db --defaults-file="$(cnf 1)" --auth-root-authentication-method=normal \
		--skip-test-db --skip-name-resolve $([ "$(id -u)" = 0 ] && echo --user=mysql) \
		>"$(dir 1)/install.log" 2>&1 || {
		tail -n 40 "$(dir 1)/install.log" >&2
		fail "mariadb-install-db failed"
	}
	for n in 2 3; do cp -a "$(dir 1)/data" "$(dir "$n")/data"; done
	if [ "$(id -u)" = 0 ]; then chown -R mysql:mysql "$root"; fi
}

cmd_start() {
	local t0=$SECONDS n
	[ -x "$mariadbd" ] || fail "$mariadbd not found (apt-get install mariadb-server)"
	[ -f "$provider" ] || fail "$provider not found (apt-get install galera-4)"
	if healthy; then
		log "already running and Synced (3 nodes)"
		return 0
	fi
	if ! command -v rsync >/dev/null; then
		log "installing rsync (SST method)"
		apt-get update -qq && apt-get install -y -qq rsync >/dev/null
	fi
	for n in "${nodes[@]}"; do
		if [ -n "$(pids "$n")" ]; then
			log "cluster not healthy; stopping leftovers and rebuilding"
			cmd_stop
			break
		fi
	done
	prepare_dirs
	start_node 1 --wsrep-new-cluster
	wait_synced 1 120
	# Joiners one at a time: an rsync donor serves one SST at a time.
	for n in 2 3; do
		start_node "$n"
		wait_synced "$n" 180
	done
	healthy || fail "nodes Synced but the cluster size is not 3 on every node"
	# root@127.0.0.1 for the tests' TCP DSNs (skip-name-resolve: TCP logins never match localhost). DDL on
	# node 1 replicates to the others.
	sql 1 "CREATE USER IF NOT EXISTS 'root'@'127.0.0.1'; GRANT ALL ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION;
		CREATE DATABASE IF NOT EXISTS \`$db\`"
	for n in 2 3; do
		local deadline=$((SECONDS + 30))
		until [ "$(sql "$n" "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME='$db'" 2>/dev/null)" = 1 ]; do
			[ $SECONDS -lt $deadline ] || fail "database $db did not reach node $n within 30 s"
			sleep 0.5
		done
	done
	log "3 nodes Synced, database $db ready, in $((SECONDS - t0)) s"
}

cmd_status() {
	local n i rc=0 state size
	for n in "${nodes[@]}"; do
		i=$((n - 1))
		state=$(wsrep "$n" wsrep_local_state_comment)
		size=$(wsrep "$n" wsrep_cluster_size)
		printf 'node%s port %s pids [%s] state %s cluster_size %s\n' "$n" "${ports[$i]}" \
			"$(pids "$n" | tr '\n' ' ' | sed 's/ $//')" "${state:-down}" "${size:--}"
		[ "$state" = Synced ] && [ "$size" = 3 ] || rc=1
	done
	return $rc
}

cmd_env() {
	local dsns="" i
	for i in 0 1 2; do
		dsns+="${dsns:+,}root@tcp(127.0.0.1:${ports[$i]})/$db?parseTime=true"
	done
	echo "export SLOTTED_GALERA_DSNS='$dsns'"
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
