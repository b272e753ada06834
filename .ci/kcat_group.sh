#!/usr/bin/env bash
# Runs kcat (librdkafka) balanced consumers (-G) against a fresh brokerd:
# two members of one group share a two-partition topic and together read
# every record; the group's committed offsets then make a later member read
# only what was produced since. Exits non-zero on any mismatch.
#
# BROKERD_BIN, if set, is used instead of building ./cmd/brokerd.
set -euo pipefail
cd "$(dirname "$0")/.."

SCRIPT=kcat_group.sh
# shellcheck source=lib.sh
source .ci/lib.sh
# Auto-created topics get two partitions, so the two members can share one.
start_brokerd --num-partitions 2

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
