#!/usr/bin/env bash
# Every route of bench/routes-results.md, one connection (wrk -t1 -c1, p50/p99 of one request
# without queueing), on the release build over a big embedded db (1,000 machines, 31 days).
# Usage: bench/routes.sh [DB] [DURATION]   (default /tmp/netops-bench-routes.db, 4s)
# The server and its pinned clock: bench/_reference_server.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
DB=${1:-/tmp/netops-bench-routes.db}
DURATION=${2:-4s}
PORT=${PORT:-8719}
OUT=/tmp/netops-bench-routes.out
. bench/_reference_server.sh
printf '%-100s %9s %9s %9s %s\n' route p50 p99 req/s bytes
# The routes of the recorded table, in its order.
grep -E '^/[a-z]' bench/routes-results.md | awk '{print $1}' | awk '!seen[$0]++' | while read -r path; do
  out=$(wrk -t1 -c1 -d"$DURATION" --latency -H "Authorization: Bearer $TOKEN" "$URL$path")
  p50=$(awk '$1 == "50%" {print $2}' <<<"$out")
  p99=$(awk '$1 == "99%" {print $2}' <<<"$out")
  rps=$(awk '$1 == "Requests/sec:" {print $2}' <<<"$out")
  answer=$(curl -s -o /tmp/netops-bench-body -w '%{http_code}' -H "Authorization: Bearer $TOKEN" "$URL$path")
  printf '%-100s %9s %9s %9s %s/%s\n' "$path" "$p50" "$p99" "$rps" "$answer" "$(stat -c %s /tmp/netops-bench-body)"
done
echo "server peak memory: $(server_peak)"
