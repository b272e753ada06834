#!/bin/bash
# A/B: the same bench workload against two builds of brokerd, alternating
# in one run, as ratios of the new build over the base. Each round runs
# both builds, in turn first (the first target of a round is slower on
# this machine); round 0 is a warm-up and is dropped. Prints every round
# and the median ratio of each figure.
#
# Usage: bench/ab.sh BASE_REV [NEW_REV] [-- bench flags]
#   NEW_REV defaults to the working tree; bench flags default to
#   -workloads produce-1k -records 1000000. ROUNDS (default 6) sets the
#   measured rounds. Needs git and jq.
set -eu
base=$1
shift
new=
if [ $# -gt 0 ] && [ "$1" != "--" ]; then
	new=$1
	shift
fi
[ "${1:-}" = "--" ] && shift
args=("$@")
[ ${#args[@]} -eq 0 ] && args=(-workloads produce-1k -records 1000000)
rounds=${ROUNDS:-6}
cd "$(dirname "$0")/.."
work=$(mktemp -d "${TMPDIR:-/tmp}/ab.XXXXXX")
trap 'git worktree remove --force "$work/base-tree" >/dev/null 2>&1 || true; git worktree remove --force "$work/new-tree" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
build() { # rev dir
	if [ -z "$1" ]; then
		go build -o "$2" ./bench
		return
	fi
	git worktree add --detach "$work/$(basename "$2")-tree" "$1" >/dev/null 2>&1
	(cd "$work/$(basename "$2")-tree" && go build -o "$2" ./bench)
}
build "$base" "$work/base"
build "$new" "$work/new"
fields='produce_mib_per_s consume_mib_per_s produce_p99_ms produce_server_cpu_s_per_gib consume_server_cpu_s_per_gib'
run() { # binary -> one line of the fields
	"$1" -no-peer -json "${args[@]}" 2>/dev/null | jq -r --arg f "$fields" \
		'.medians[0] as $m | ($f | split(" ") | map($m[.] // 0 | tostring) | join(" "))'
}
echo "base=${base} new=${new:-working tree} args: ${args[*]}"
echo "round order  $fields  (base / new / ratio)"
ratios=$work/ratios
: >"$ratios"
for r in $(seq 0 "$rounds"); do
	if [ $((r % 2)) -eq 0 ]; then
		a=$(run "$work/base"); b=$(run "$work/new"); order=base-first
	else
		b=$(run "$work/new"); a=$(run "$work/base"); order=new-first
	fi
	line=$(paste -d' ' <(tr ' ' '\n' <<<"$a") <(tr ' ' '\n' <<<"$b") | awk '{ printf "%s/%s/%.2f ", $1, $2, ($1 > 0 ? $2 / $1 : 0) }')
	echo "$r $order $line"
	[ "$r" -gt 0 ] && paste -d' ' <(tr ' ' '\n' <<<"$a") <(tr ' ' '\n' <<<"$b") | awk '{ printf "%.4f ", ($1 > 0 ? $2 / $1 : 0) } END { print "" }' >>"$ratios"
done
echo "median ratio (new/base) over $rounds rounds:"
i=1
for f in $fields; do
	printf '  %-30s %s\n' "$f" "$(cut -d' ' -f$i "$ratios" | sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.4f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }')"
	i=$((i + 1))
done
