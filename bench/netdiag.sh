#!/usr/bin/env bash
# NetDiag benchmark (issue 5): 1,000 machines, 30 days, embedded store, release build.
# Usage: bench/netdiag.sh [db] [port]    (run from the repository root)
set -euo pipefail
DB=${1:-/tmp/netdiag-bench.db}
PORT=${2:-18477}
BIN=target/release/netops
cargo build --release -p netops
if [ ! -f "$DB" ]; then
  "$BIN" seed --db "$DB" --machines 1000 --days 30
fi
LOG=$(mktemp)
NETOPS_RATE_LIMIT=100000000 RUST_LOG=warn "$BIN" serve --db "$DB" --addr "127.0.0.1:$PORT" >"$LOG" 2>&1 &
SERVER=$!
trap 'kill $SERVER' EXIT
for _ in $(seq 1 100); do grep -q '^token:' "$LOG" && break; sleep 0.2; done
TOKEN=$(sed -n 's/^token: \(nop_[A-Za-z0-9]*\).*/\1/p' "$LOG" | head -1)
BASE="http://127.0.0.1:$PORT/api/v1"
AUTH="Authorization: Bearer $TOKEN"

# Twenty machines under diagnosis, rotated by wrk.
HOSTS=$(curl -s --retry 5 --retry-connrefused -H "$AUTH" "$BASE/netdiag/machines" | python3 -c 'import json,sys; print(" ".join(m["hostname"] for m in json.load(sys.stdin)["data"][:400:20]))')
LUA=$(mktemp --suffix=.lua)
bench() { # $1 label, $2 path template with HOST
  python3 - "$2" $HOSTS >"$LUA" <<'PY'
import sys
tpl, hosts = sys.argv[1], sys.argv[2:]
paths = ",".join('"%s"' % tpl.replace("HOST", h) for h in hosts)
print("local paths = {%s}\nlocal i = 0\nrequest = function()\n  i = i %% #paths + 1\n  return wrk.format(nil, paths[i])\nend" % paths)
PY
  echo "== $1: $2"
  wrk -t2 -c8 -d10s --latency -s "$LUA" -H "$AUTH" "$BASE" | grep -E '^\s+(50|99)%|Requests/sec|Non-2xx'
}
bench "summary over 30 days" "/api/v1/netdiag/machines/HOST/summary?period=30d"
bench "events, first page with q (24 h)" "/api/v1/netdiag/machines/HOST/events?q=alerte"
bench "events, first page with q (30 days)" "/api/v1/netdiag/machines/HOST/events?q=alerte&period=30d"
bench "report.pdf over 7 days" "/api/v1/netdiag/machines/HOST/report.pdf?period=7d"

echo "== report.pdf over 7 days, one by one (time, size)"
for h in $HOSTS; do
  curl -s -o /dev/null -w "%{time_total}s %{size_download} bytes\n" -H "$AUTH" "$BASE/netdiag/machines/$h/report.pdf?period=7d"
done | sort -n | awk '{t[NR]=$1; if ($2 > s) s=$2} END {print "fastest", t[1], "slowest", t[NR], "largest", s, "bytes"}'
