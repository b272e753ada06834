#!/usr/bin/env bash
# The whole check: formatting, vet, unit and end-to-end tests (also under the
# race detector for the concurrent packages; fuzz seed corpora run as part of
# go test), then kcat (librdkafka) and kafka-python against a real brokerd.
#
# BROKERD_LONG_TESTS=1 enables the longer fault tests (.ci/run sets it).
set -euo pipefail
cd "$(dirname "$0")"

step() { printf '\n==> %s\n' "$*"; }

# --- tools ------------------------------------------------------------------
need_kcat=0
need_pykafka=0
command -v kcat >/dev/null 2>&1 || need_kcat=1
/usr/bin/python3 -c 'import kafka' >/dev/null 2>&1 || need_pykafka=1
if [[ $need_kcat -eq 1 || $need_pykafka -eq 1 ]]; then
	step "installing kcat and python3-kafka"
	SUDO=()
	if [[ $(id -u) -ne 0 ]]; then
		if command -v sudo >/dev/null 2>&1; then
			SUDO=(sudo)
		else
			echo "test.sh: kcat or python3-kafka is missing and this is not root (no sudo)" >&2
			exit 1
		fi
	fi
	"${SUDO[@]}" apt-get update
	"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y kcat python3-kafka
fi

# --- static checks ----------------------------------------------------------
step "gofmt"
unformatted=$(gofmt -l .)
if [[ -n "$unformatted" ]]; then
	echo "test.sh: these files need gofmt -w:" >&2
	echo "$unformatted" >&2
	exit 1
fi

step "go vet ./..."
go vet ./...

step "go build ./..."
go build ./...

# One brokerd binary for the e2e subprocess tests and the client scripts.
BIN_DIR=$(mktemp -d -t brokerd-test-XXXXXX)
trap 'rm -rf "$BIN_DIR"' EXIT
CGO_ENABLED=0 go build -o "$BIN_DIR/brokerd" ./cmd/brokerd
export BROKERD_BIN="$BIN_DIR/brokerd"

# --- tests ------------------------------------------------------------------
step "go test ./..."
go test -timeout 15m ./...

step "go test -race (the packages with concurrency)"
go test -race -timeout 25m ./broker/... ./raftstore/... ./log/... ./internal/... ./processor/... ./e2e/...

# --- real clients -----------------------------------------------------------
step ".ci/kcat.sh"
.ci/kcat.sh

step ".ci/kafka_python.py"
/usr/bin/python3 .ci/kafka_python.py

step ".ci/kcat_group.sh"
.ci/kcat_group.sh

step ".ci/kafka_python_group.py"
/usr/bin/python3 .ci/kafka_python_group.py

step "all checks passed"
