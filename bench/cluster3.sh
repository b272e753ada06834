#!/bin/bash
# Runs the bench against a three-node brokerd cluster on this machine: each
# node a process of its own with its own data directory, all on 127.0.0.1.
#
# Usage: bench/cluster3.sh BROKERD_BINARY [bench flags]
#   e.g. bench/cluster3.sh ./brokerd -rate 10000 -duration 10s
# Bench flags default to -workloads produce-1k -records 300000; -brokers,
# -replication 3 and -no-peer are always passed.
set -eu
bin=$(realpath "$1")
shift
args=("$@")
[ ${#args[@]} -eq 0 ] && args=(-workloads produce-1k -records 300000)
cd "$(dirname "$0")/.."
work=$(mktemp -d "${TMPDIR:-/tmp}/cluster3.XXXXXX")
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
peers=1@127.0.0.1:29191,2@127.0.0.1:29192,3@127.0.0.1:29193
for i in 1 2 3; do
	"$bin" --node-id $i --data-dir "$work/n$i" --kafka-addr 127.0.0.1:2909$i \
		--admin-addr 127.0.0.1:2964$i --raft-addr 127.0.0.1:2919$i --peers $peers \
		--log-level warn >"$work/n$i.log" 2>&1 &
	pids+=($!)
done
# Ready once every node answers /readyz.
for i in 1 2 3; do
	for _ in $(seq 100); do
		curl -sf "http://127.0.0.1:2964$i/readyz" >/dev/null && break
		sleep 0.2
	done
done
# And once Metadata lists all three brokers.
for _ in $(seq 100); do
	n=$("$bin" cluster info -b 127.0.0.1:29091 --format json 2>/dev/null | jq '.brokers | length' 2>/dev/null || echo 0)
	[ "$n" = 3 ] && break
	sleep 0.2
done
${BENCH:-go run ./bench} -brokers 127.0.0.1:29091,127.0.0.1:29092,127.0.0.1:29093 -replication 3 -no-peer "${args[@]}"
