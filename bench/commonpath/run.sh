#!/usr/bin/env bash
# The common path of one warm, uncontended Lock+Unlock on a redis-server:
# the library functions and files it runs, and its depth at each send.
# usage: bash run.sh
set -euo pipefail
cd "$(dirname "$0")"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"; redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true' EXIT
go build -cover -covermode=atomic -coverpkg=github.com/relock-go/relock/... -o "$tmp/commonpath" .
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no >/dev/null 2>&1 &
for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
mkdir "$tmp/cov"
GOCOVERDIR="$tmp/cov" "$tmp/commonpath" -addr "127.0.0.1:$port" -out "$tmp/cov"
# Blocks run (count > 0) of library files: not bench, tools, cmd, examples or testkit.
lib='^github.com/relock-go/relock/(bench|tools|cmd|examples|internal/testkit)/'
for call in lock unlock; do
	cp "$tmp/cov"/covmeta.* "$tmp/cov/$call/"
	go tool covdata textfmt -i "$tmp/cov/$call" -o "$tmp/$call.txt"
	awk 'NR > 1 && $NF > 0' "$tmp/$call.txt" | grep -Ev "$lib" >"$tmp/$call.run" || true
	{ head -1 "$tmp/$call.txt"; cat "$tmp/$call.run"; } >"$tmp/$call.ran"
	funcs=$(go tool cover -func="$tmp/$call.ran" 2>/dev/null | grep -v '^total' | awk '$NF != "0.0%"' | wc -l)
	echo "$call: $(cut -d: -f1 "$tmp/$call.run" | sort -u | wc -l) files, $funcs functions run"
	cut -d: -f1 "$tmp/$call.run" | sort -u | sed 's|^github.com/relock-go/relock/|  |'
done
