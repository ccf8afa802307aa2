#!/usr/bin/env bash
# Benchmarks of the alerts and operations functions (issue 6): 1,000 machines, 30 days of
# history, embedded store, release build. Usage: bench/alerts.sh [port]
set -euo pipefail
cd "$(dirname "$0")/.."
PORT="${1:-18086}"
DB="${DB:-/tmp/alerts-bench.db}"
cargo build --release -p netops
if [ ! -f "$DB" ]; then
  target/release/netops seed --db "$DB" --machines 1000 --days 30
fi
OUT=$(mktemp)
NETOPS_RATE_LIMIT=100000000 RUST_LOG=warn target/release/netops serve --db "$DB" --addr "127.0.0.1:$PORT" >"$OUT" 2>&1 &
PID=$!
trap 'kill "$PID" 2>/dev/null || true; rm -f "$OUT"' EXIT
for _ in $(seq 1 100); do grep -q '^token: ' "$OUT" && break; sleep 0.2; done
TOKEN=$(grep '^token: ' "$OUT" | head -1 | awk '{print $2}')
BASE="http://127.0.0.1:$PORT/api/v1"
# CPU time the server spends per request, measured from /proc: independent of the load
# other processes put on the machine (wall-clock percentiles are not).
cpu_per_request() {
  local n=40 tick a b
  tick=$(getconf CLK_TCK)
  a=$(awk '{print $14+$15}' "/proc/$PID/stat")
  for _ in $(seq 1 $n); do curl -s -o /dev/null -H "Authorization: Bearer $TOKEN" "$BASE$1"; done
  b=$(awk '{print $14+$15}' "/proc/$PID/stat")
  echo "cpu $(( (b - a) * 1000 / tick / n )) ms per request"
}
run() {
  echo "== $1"
  curl -s -o /dev/null -w 'status %{http_code}, %{size_download} bytes\n' -H "Authorization: Bearer $TOKEN" "$BASE$1"
  cpu_per_request "$1"
  wrk -t2 -c8 -d10s --latency -H "Authorization: Bearer $TOKEN" "$BASE$1" | grep -E 'Latency|50%|75%|90%|99%|Requests/sec'
}
run "/alerts?status=all&period=30d"
run "/alerts?status=open"
run "/alerts"
run "/monitors"
run "/monitors/1001"
run "/monitors/1001/incidents"
run "/maintenance"
run "/heartbeats"
run "/profiles"
run "/profiles/deployments/10001/compare"
