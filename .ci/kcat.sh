#!/usr/bin/env bash
# Runs kcat (librdkafka) against a fresh brokerd: produce and consume with
# every codec, keys and headers, an idempotent producer, metadata (-L) and
# offsets for times (-Q). Exits non-zero on any mismatch.
#
# BROKERD_BIN, if set, is used instead of building ./cmd/brokerd.
set -euo pipefail
cd "$(dirname "$0")/.."

SCRIPT=kcat.sh
# shellcheck source=lib.sh
source .ci/lib.sh
start_brokerd

KC=(timeout 60 kcat -b "$B" -X socket.timeout.ms=10000 -X message.timeout.ms=30000)

# 1. 100 lines to an auto-created topic, with each codec, read back.
seq 1 100 | sed 's/^/line-/' >"$TMP/input"
T0=$(( $(date +%s) * 1000 - 1000 ))
for codec in none gzip snappy lz4 zstd; do
	topic="kcat-$codec"
	"${KC[@]}" -P -t "$topic" -z "$codec" <"$TMP/input" || fail "kcat -P -z $codec to $topic"
	"${KC[@]}" -C -t "$topic" -o beginning -e -q >"$TMP/output" || fail "kcat -C from $topic"
	if ! diff -u "$TMP/input" "$TMP/output" >"$TMP/diff"; then
		head -20 "$TMP/diff" >&2
		fail "kcat -C $topic did not return the 100 lines kcat -P produced ($codec)"
	fi
	echo "kcat.sh: ok: 100 lines round trip through $topic ($codec)"
done

# 2. Keys and headers, idempotent producer with acks=all.
topic=kcat-keys
for i in $(seq 1 20); do echo "key$i:value$i"; done >"$TMP/kv"
"${KC[@]}" -P -t "$topic" -K: -H "h1=v1" -H "h2=v2" -X enable.idempotence=true -X acks=all <"$TMP/kv" ||
	fail "kcat -P (idempotent, keys, headers)"
"${KC[@]}" -C -t "$topic" -o beginning -e -q -f '%k:%s|%h|%p|%o\n' >"$TMP/kvout" || fail "kcat -C $topic"
i=0
while IFS= read -r line; do
	i=$((i + 1))
	want="key$i:value$i|h1=v1,h2=v2|0|$((i - 1))"
	[[ "$line" == "$want" ]] || fail "kcat -C $topic line $i: got '$line', want '$want'"
done <"$TMP/kvout"
[[ $i -eq 20 ]] || fail "kcat -C $topic: $i records, want 20"
echo "kcat.sh: ok: keys, headers, offsets (idempotent producer)"

# 3. Metadata.
"${KC[@]}" -L -t kcat-none >"$TMP/meta" || fail "kcat -L"
grep -q "broker 1 at $B" "$TMP/meta" || { cat "$TMP/meta" >&2; fail "kcat -L does not list broker 1 at $B"; }
grep -q 'topic "kcat-none" with 1 partitions' "$TMP/meta" || { cat "$TMP/meta" >&2; fail "kcat -L does not list kcat-none with 1 partition"; }
grep -q 'partition 0, leader 1' "$TMP/meta" || { cat "$TMP/meta" >&2; fail "kcat -L: partition 0 is not led by broker 1"; }
"${KC[@]}" -L >"$TMP/metaall" || fail "kcat -L (all topics)"
for codec in none gzip snappy lz4 zstd; do
	grep -q "topic \"kcat-$codec\"" "$TMP/metaall" || fail "kcat -L (all topics) misses kcat-$codec"
done
echo "kcat.sh: ok: metadata"

# 4. Offsets for times (ListOffsets by timestamp): before everything -> 0;
# in the future -> the end (-1 from the broker, shown by kcat as the end or -1).
"${KC[@]}" -Q -t "kcat-none:0:$T0" >"$TMP/q0" || fail "kcat -Q at $T0"
grep -Eq 'kcat-none \[0\] offset 0$' "$TMP/q0" || { cat "$TMP/q0" >&2; fail "kcat -Q before the first record: want offset 0"; }
FUTURE=$(( ($(date +%s) + 3600) * 1000 ))
"${KC[@]}" -Q -t "kcat-none:0:$FUTURE" >"$TMP/q1" || fail "kcat -Q at $FUTURE"
grep -Eq 'kcat-none \[0\] offset (-1|100)$' "$TMP/q1" || { cat "$TMP/q1" >&2; fail "kcat -Q after the last record: want -1 or 100"; }
echo "kcat.sh: ok: offsets for times"

# 5. Consuming from the end sees nothing and exits; from offset 95 sees 5.
"${KC[@]}" -C -t kcat-none -o 95 -e -q >"$TMP/tail" || fail "kcat -C -o 95"
[[ $(wc -l <"$TMP/tail") -eq 5 && $(head -1 "$TMP/tail") == "line-96" ]] || { cat "$TMP/tail" >&2; fail "kcat -C -o 95: want line-96..line-100"; }
echo "kcat.sh: ok: consume from an offset"

echo "kcat.sh: PASS"
