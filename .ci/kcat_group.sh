#!/usr/bin/env bash
# Runs kcat (librdkafka) balanced consumers (-G) against a fresh brokerd:
# two members of one group share a two-partition topic and together read
# every record; the group's committed offsets then make a later member read
# only what was produced since. Exits non-zero on any mismatch.
#
# BROKERD_BIN, if set, is used instead of building ./cmd/brokerd.
set -euo pipefail
cd "$(dirname "$0")/.."

TMP=$(mktemp -d -t brokerd-kcat-group-XXXXXX)
BROKER_PID=""
cleanup() {
	local rc=$?
	jobs -p | xargs -r kill 2>/dev/null || true
	if [[ -n "$BROKER_PID" ]] && kill -0 "$BROKER_PID" 2>/dev/null; then
		kill -TERM "$BROKER_PID" 2>/dev/null || true
		for _ in $(seq 1 100); do
			kill -0 "$BROKER_PID" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$BROKER_PID" 2>/dev/null || true
		wait "$BROKER_PID" 2>/dev/null || true
	fi
	if [[ $rc -ne 0 && -f "$TMP/brokerd.log" ]]; then
		echo "---- brokerd log (tail) ----" >&2
		tail -n 60 "$TMP/brokerd.log" >&2 || true
	fi
	rm -rf "$TMP"
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail() {
	echo "kcat_group.sh: FAIL: $*" >&2
	exit 1
}

command -v kcat >/dev/null || fail "kcat is not installed (apt-get install kcat)"

free_port() {
	/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

BIN="${BROKERD_BIN:-}"
if [[ -z "$BIN" ]]; then
	BIN="$TMP/brokerd"
	CGO_ENABLED=0 go build -o "$BIN" ./cmd/brokerd
fi

KPORT=$(free_port)
APORT=$(free_port)
RPORT=$(free_port)
B="127.0.0.1:$KPORT"
# Auto-created topics get two partitions, so the two members can share one.
"$BIN" --data-dir "$TMP/data" --kafka-addr "$B" --admin-addr "127.0.0.1:$APORT" \
	--raft-addr "127.0.0.1:$RPORT" --num-partitions 2 >"$TMP/brokerd.log" 2>&1 &
BROKER_PID=$!

ready=""
for _ in $(seq 1 300); do
	if curl -fsS "http://127.0.0.1:$APORT/readyz" >/dev/null 2>&1; then
		ready=1
		break
	fi
	kill -0 "$BROKER_PID" 2>/dev/null || fail "brokerd exited before it was ready"
	sleep 0.1
done
[[ -n "$ready" ]] || fail "brokerd not ready after 30s"
echo "kcat_group.sh: brokerd ready on $B"

TOPIC=kcat-group
GROUP=kcat-group-g
KC=(timeout 60 kcat -b "$B" -X socket.timeout.ms=10000)
# A balanced consumer that exits once its partitions are read to the end.
# Offsets are auto-committed, and committed once more when it leaves.
member() {
	"${KC[@]}" -G "$GROUP" -X auto.offset.reset=earliest -X session.timeout.ms=10000 \
		-X heartbeat.interval.ms=500 -e -q -f '%s\n' "$TOPIC"
}

# 1. 100 keyed lines spread over both partitions.
for i in $(seq 1 100); do echo "k$i:first-$i"; done >"$TMP/first"
"${KC[@]}" -P -t "$TOPIC" -K: -X acks=all <"$TMP/first" || fail "kcat -P to $TOPIC"
cut -d: -f2 "$TMP/first" | sort >"$TMP/first.want"

# 2. Two members of the group read them together.
member >"$TMP/m1" 2>"$TMP/m1.err" &
M1=$!
member >"$TMP/m2" 2>"$TMP/m2.err" &
M2=$!
wait "$M1" || { cat "$TMP/m1.err" >&2; fail "member 1 (kcat -G) failed"; }
wait "$M2" || { cat "$TMP/m2.err" >&2; fail "member 2 (kcat -G) failed"; }
sort -u "$TMP/m1" "$TMP/m2" >"$TMP/first.got"
if ! diff -u "$TMP/first.want" "$TMP/first.got" >"$TMP/diff"; then
	head -20 "$TMP/diff" >&2
	fail "two kcat -G members did not read every record between them"
fi
dups=$(( $(cat "$TMP/m1" "$TMP/m2" | wc -l) - 100 ))
echo "kcat_group.sh: ok: two members read all 100 records (member 1: $(wc -l <"$TMP/m1"), member 2: $(wc -l <"$TMP/m2"), read twice: $dups)"

# 3. The committed offsets are at the end: a new member reads nothing old,
# then only what is produced after.
member >"$TMP/none" 2>"$TMP/none.err" || { cat "$TMP/none.err" >&2; fail "kcat -G after everything was read"; }
[[ ! -s "$TMP/none" ]] || { head "$TMP/none" >&2; fail "a new member re-read records the group had committed"; }
for i in $(seq 1 20); do echo "k$i:second-$i"; done >"$TMP/second"
"${KC[@]}" -P -t "$TOPIC" -K: -X acks=all <"$TMP/second" || fail "kcat -P (second batch)"
member >"$TMP/m3" 2>"$TMP/m3.err" || { cat "$TMP/m3.err" >&2; fail "kcat -G (second batch)"; }
cut -d: -f2 "$TMP/second" | sort >"$TMP/second.want"
sort "$TMP/m3" >"$TMP/second.got"
if ! diff -u "$TMP/second.want" "$TMP/second.got" >"$TMP/diff"; then
	head -20 "$TMP/diff" >&2
	fail "a member after a commit did not read exactly the 20 new records"
fi
echo "kcat_group.sh: ok: committed offsets: a later member read exactly the 20 new records"

echo "kcat_group.sh: PASS"
