#!/usr/bin/env bash
# Regenerates the raw figures behind BENCHMARKS.md: one run per database, one after the other, with nothing else
# running. Needs SLOTTED_MYSQL_DSN and SLOTTED_POSTGRES_DSN (see README); takes about 30 minutes on 2 cores.
# Output: benchmarks/<db>.txt (go test -bench), benchmarks/slotbench-<db>.{txt,svg} (the tuner).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p benchmarks
dbs=${*:-sqlite mysql postgres}
for db in $dbs; do
	out=benchmarks/$db.txt
	: >"$out"
	{
		echo "# $(date -u +%FT%TZ) $(go version) on $(nproc) cores"
		# The paired plugin/raw ratio (ignores -benchtime: 16 rounds of 1 s windows per side).
		SLOTTED_BENCH_ROUNDS=16 go test -run '^$' -bench "IncrementPaired/^$db\$" -benchtime 1x ./tests
		go test -run '^$' -bench "Suite(Increment|Count|Load1000|Find100)/^$db\$" -benchmem -benchtime 2s -timeout 60m ./tests
		go test -run '^$' -bench "SuiteTableSize/^$db\$" -benchtime 1x -timeout 60m ./tests
		go test -run '^$' -bench "CountCompacted/^$db\$" -benchtime 2s ./tests
		go test -run '^$' -bench "CompactAll/^$db\$" -benchtime 1x -timeout 60m ./tests
		# Counter caches: child Create with the slotted cache vs the Rails-style column vs none, paired (ignores -benchtime).
		go test -run '^$' -bench "CounterCachePaired/^$db\$" -benchtime 1x -timeout 30m ./tests
		# Coalesced writes against per-op, single-row UPDATE and Redis INCR; write-behind (ignore -benchtime).
		SLOTTED_BENCH_INFLIGHT=4 go test -run '^$' -bench "CoalescePaired/^$db\$" -benchtime 1x -timeout 60m ./tests
		go test -run '^$' -bench "WriteBehind/^$db\$" -benchtime 1x -timeout 60m ./tests
	} 2>"benchmarks/$db.stderr.log" | grep -E '^(#|Benchmark|goos|goarch|cpu|pkg|ok|FAIL|---)' | tee -a "$out"
	dsn=""
	case $db in
	mysql) dsn=$SLOTTED_MYSQL_DSN ;;
	postgres) dsn=$SLOTTED_POSTGRES_DSN ;;
	esac
	go run ./cmd/slotbench ${dsn:+-dsn "$dsn"} -quiet -svg "benchmarks/slotbench-$db.svg" | tee "benchmarks/slotbench-$db.txt"
done
