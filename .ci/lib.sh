# Shared by the kcat scripts: a temp dir, cleanup on exit, and a fresh
# brokerd on free loopback ports. Source it after setting SCRIPT (the name
# used in messages).
#
# BROKERD_BIN, if set, is used instead of building ./cmd/brokerd.

TMP=$(mktemp -d -t "brokerd-${SCRIPT%.*}-XXXXXX")
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
	echo "$SCRIPT: FAIL: $*" >&2
	exit 1
}

command -v kcat >/dev/null || fail "kcat is not installed (apt-get install kcat)"

free_port() {
	/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# start_brokerd [extra flags...] starts brokerd, waits for /readyz, and sets
# B (the Kafka address) and BROKER_PID.
start_brokerd() {
	local bin="${BROKERD_BIN:-}"
	if [[ -z "$bin" ]]; then
		bin="$TMP/brokerd"
		CGO_ENABLED=0 go build -o "$bin" ./cmd/brokerd
	fi
	local kport aport rport
	kport=$(free_port)
	aport=$(free_port)
	rport=$(free_port)
	B="127.0.0.1:$kport"
	"$bin" --data-dir "$TMP/data" --kafka-addr "$B" --admin-addr "127.0.0.1:$aport" \
		--raft-addr "127.0.0.1:$rport" "$@" >"$TMP/brokerd.log" 2>&1 &
	BROKER_PID=$!
	for _ in $(seq 1 300); do
		if curl -fsS "http://127.0.0.1:$aport/readyz" >/dev/null 2>&1; then
			echo "$SCRIPT: brokerd ready on $B"
			return 0
		fi
		kill -0 "$BROKER_PID" 2>/dev/null || fail "brokerd exited before it was ready"
		sleep 0.1
	done
	fail "brokerd not ready after 30s"
}
