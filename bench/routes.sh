#!/usr/bin/env bash
# Every route of bench/routes-results.md, one connection (wrk -t1 -c1, p50/p99 of one request
# without queueing), on the release build over a big embedded db (1,000 machines, 31 days).
# Usage: bench/routes.sh [DB] [DURATION]   (default /tmp/netops-bench-routes.db, 4s)
# The clock is pinned (faketime, BENCH_AT): the demo's office processes run by day, so a
# filter such as process=teams walks the whole night back from a night-time "now" (20 ms)
# and finds its page at once by day (0.7 ms). A DB seeded elsewhere must hold BENCH_AT.
set -euo pipefail
cd "$(dirname "$0")/.."
DB=${1:-/tmp/netops-bench-routes.db}
DURATION=${2:-4s}
PORT=${PORT:-8719}
BIN=target/release/netops
BENCH_AT=${BENCH_AT:-2026-11-24 16:00:00}
CLOCK=(faketime -f "@$BENCH_AT")
[ -x "$BIN" ] || cargo build --release -p netops
[ -f "$DB" ] || "${CLOCK[@]}" "$BIN" seed --db "$DB" --machines 1000 --days 31 >&2
TOKEN=$("$BIN" token create --db "$DB" --tenant acme --name "bench-$$" --scopes all)
NETOPS_RATE_LIMIT=100000000 RUST_LOG=warn "${CLOCK[@]}" "$BIN" serve --db "$DB" --addr "127.0.0.1:$PORT" >/tmp/netops-bench-routes.out 2>&1 &
SERVER=$!
# faketime runs the server as its child: stop both.
trap 'pkill -P $SERVER 2>/dev/null; kill $SERVER 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do curl -fs "http://127.0.0.1:$PORT/api/v1/openapi.json" -o /dev/null && break; sleep 0.2; done
# Another server on the port would be measured in its place.
kill -0 $SERVER 2>/dev/null || { echo "the server did not start: $(tail -1 /tmp/netops-bench-routes.out)" >&2; exit 1; }
printf '%-100s %9s %9s %9s %s\n' route p50 p99 req/s bytes
# The routes of the recorded table, in its order.
grep -E '^/[a-z]' bench/routes-results.md | awk '{print $1}' | awk '!seen[$0]++' | while read -r path; do
  out=$(wrk -t1 -c1 -d"$DURATION" --latency -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$PORT/api/v1$path")
  p50=$(awk '$1 == "50%" {print $2}' <<<"$out")
  p99=$(awk '$1 == "99%" {print $2}' <<<"$out")
  rps=$(awk '$1 == "Requests/sec:" {print $2}' <<<"$out")
  answer=$(curl -s -o /tmp/netops-bench-body -w '%{http_code}' -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$PORT/api/v1$path")
  printf '%-100s %9s %9s %9s %s/%s\n' "$path" "$p50" "$p99" "$rps" "$answer" "$(stat -c %s /tmp/netops-bench-body)"
done
echo "server peak memory: $(awk '/VmHWM/ {print $2, $3}' "/proc/$(pgrep -P $SERVER)/status")"
