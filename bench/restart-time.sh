#!/bin/bash
# Restart time of a one-node brokerd holding about 10 GiB of log: the time
# from starting the process to /readyz answering 200, after a kill -9 and
# after a SIGTERM. Usage: bench/restart-time.sh [records of 1 KiB]
# (default 10500000, about 10 GiB). Needs curl and bc; uses ports 19092,
# 19644 and 19145 and a data directory under ${TMPDIR:-/tmp}. BROKERD=path
# measures that brokerd binary (another build) instead of this tree's.
set -eu
records=${1:-10500000}
work=$(mktemp -d "${TMPDIR:-/tmp}/restart-time.XXXXXX")
D=$work/data
cd "$(dirname "$0")/.."
if [ -n "${BROKERD:-}" ]; then
	cp "$BROKERD" "$work/brokerd"
else
	CGO_ENABLED=0 go build -o "$work/brokerd" ./cmd/brokerd
fi
go build -o "$work/bench" ./bench
start() {
	"$work/brokerd" --data-dir "$D" --kafka-addr 127.0.0.1:19092 --admin-addr 127.0.0.1:19644 \
		--raft-addr 127.0.0.1:19145 >>"$work/brokerd.log" 2>&1 &
	pid=$!
}
ready() {
	local t0
	t0=$(date +%s.%N)
	until curl -sf -o /dev/null http://127.0.0.1:19644/readyz; do sleep 0.05; done
	echo "$(date +%s.%N) - $t0" | bc
}
start
ready >/dev/null
"$work/bench" -brokers 127.0.0.1:19092 -workloads produce-1k -records "$records" -partitions 4 \
	-timeout 60m -stall 2m -keep-topics -no-peer | grep -v '^$'
sleep 40 # a snapshot interval (brokerd.raft.snapshot.interval.ms) passes
echo "on disk: $(du -sh "$D" | cut -f1) in all, $(du -sh "$D/raft" | cut -f1) of it raft's"
kill -9 "$pid"
wait "$pid" 2>/dev/null || true
start
echo "kill -9 -> /readyz: $(ready) s"
sleep 5
kill -TERM "$pid"
wait "$pid" 2>/dev/null || true
start
echo "SIGTERM -> /readyz: $(ready) s"
kill -TERM "$pid"
wait "$pid" 2>/dev/null || true
rm -rf "$work"
