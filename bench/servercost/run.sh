#!/usr/bin/env bash
# Server instructions per uncontended pair: redis-server under callgrind,
# 200 then 2,200 pairs, (Ir(2200) - Ir(200)) / 2000. Needs valgrind.
# usage: bash run.sh [relock|relock-fair|relock-read|relock-write|relock-sem|relock-reentrant|redisson]
set -euo pipefail
lib=${1:-relock}
cd "$(dirname "$0")"
go build -o /tmp/servercost .
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
ir() {
	out=$(mktemp)
	valgrind --tool=callgrind --callgrind-out-file="$out" redis-server --port "$port" --bind 127.0.0.1 \
		--save '' --appendonly no >/dev/null 2>&1 &
	vp=$!
	for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.2; done
	/tmp/servercost -addr "127.0.0.1:$port" -n "$1" -lib "$lib"
	redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
	wait "$vp" || true
	grep -E '^(summary|totals):' "$out" | head -1 | awk '{print $2}'
	rm -f "$out"
}
a=$(ir 200)
b=$(ir 2200)
echo "$lib: $(( (b - a) / 2000 )) instructions per pair"
