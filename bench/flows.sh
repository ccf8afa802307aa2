#!/usr/bin/env bash
# Benchmarks of the flows routes (issue 4, docs/modules.md#flows): seed a big tenant, serve
# it from the release build, measure each route with wrk (2 threads, 8 connections), report p50/p99
# and the server's peak memory (VmHWM).
#
#   MACHINES=1000 DAYS=31 bench/flows.sh          # seed + measure
#   SKIP_SEED=1 bench/flows.sh                    # measure an existing db
set -euo pipefail
cd "$(dirname "$0")/.."
MACHINES=${MACHINES:-1000}
DAYS=${DAYS:-31}
DB=${DB:-/tmp/flows-bench.db}
PORT=${PORT:-18084}
DURATION=${DURATION:-10s}
BIN=target/release/netops
[ -x "$BIN" ] || cargo build --release -p netops
if [ "${SKIP_SEED:-0}" != 1 ]; then
    rm -f "$DB" "$DB-wal" "$DB-shm"
    /usr/bin/time -f "seed: %e s wall, %M KiB peak memory" "$BIN" seed --db "$DB" --machines "$MACHINES" --days "$DAYS"
fi
ls -l "$DB" | awk '{printf "db size: %.1f GB\n", $5/1e9}'
NETOPS_RATE_LIMIT=100000000 RUST_LOG=warn "$BIN" serve --db "$DB" --addr "127.0.0.1:$PORT" > /tmp/flows-bench-serve.out 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null || true' EXIT
for _ in $(seq 100); do grep -q 'nop_' /tmp/flows-bench-serve.out 2>/dev/null && break; sleep 0.2; done
TOKEN=$(grep -o 'nop_[A-Za-z0-9]*' /tmp/flows-bench-serve.out | head -1)
BASE="http://127.0.0.1:$PORT/api/v1"
run() {
    printf '%-90s ' "$1"
    wrk -t2 -c8 -d"$DURATION" --latency -H "Authorization: Bearer $TOKEN" "$BASE$1" \
        | awk '/^ +50%/{p50=$2} /^ +99%/{p99=$2} /Requests\/sec/{rps=$2} /Non-2xx/{bad=$NF} END{printf "p50 %-9s p99 %-9s %8s req/s %s\n", p50, p99, rps, (bad ? "NON-2XX: " bad : "")}'
}
# /flows first page with one filter (7-day detailed window cap applies to longer periods).
run "/flows?protocol=UDP"
run "/flows?direction=inbound"
run "/flows?remote_port=443"
run "/flows?remote_ip=52."
run "/flows?process=teams"
run "/flows?destination=google"
run "/flows?machine=PAR-LT-0001"
run "/flows?machine=PAR-LT-0001&period=7d"
run "/flows?remote_port=3389"
# Aggregates over 31 days.
run "/flows/summary?period=30d"
run "/flows/summary?from=$(date -u -d '-31 days' +%Y-%m-%dT%H:%M:%SZ)"
run "/flows/summary?from=$(date -u -d '-31 days' +%Y-%m-%dT%H:%M:%SZ)&machine=PAR-LT-0001"
run "/flows/destinations?from=$(date -u -d '-31 days' +%Y-%m-%dT%H:%M:%SZ)"
run "/flows/destinations?from=$(date -u -d '-31 days' +%Y-%m-%dT%H:%M:%SZ)&source=all"
run "/flows/destinations?from=$(date -u -d '-31 days' +%Y-%m-%dT%H:%M:%SZ)&machine=PAR-LT-0001"
run "/flows/talkers?period=30d"
run "/flows/blocked"
# Explore over 30 days, 3 dimensions and a filter.
run "/flows/explore?period=30d&dims=pays,operateur,service&filter=sens%20%3D%20outbound"
run "/flows/explore?period=30d&dims=pays,operateur,service&filter=sens%20%3D%20outbound%20et%20pays%20!%3D%20FR&source=all"
run "/flows/explore?period=30d&dims=site,processus,pays&filter=proto%20%3D%20TCP"
run "/flows/explore?period=24h&dims=interne,externe,port&filter=sens%20%3D%20outbound"
echo "server peak memory: $(grep VmHWM /proc/$PID/status | awk '{print $2, $3}')"
