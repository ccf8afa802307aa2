#!/usr/bin/env bash
# One client (wrk -t1 -c1): per-request latency without queueing behind other requests,
# for the routes that have a target in issue 4; then the server's memory split.
set -euo pipefail
cd "$(dirname "$0")/.."
DB=${DB:-/tmp/flows-bench.db}; PORT=${PORT:-18086}; DURATION=${DURATION:-5s}
NETOPS_RATE_LIMIT=100000000 RUST_LOG=warn target/release/netops serve --db "$DB" --addr "127.0.0.1:$PORT" > /tmp/flows-c1-serve.out 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null || true' EXIT
for _ in $(seq 100); do grep -q 'nop_' /tmp/flows-c1-serve.out 2>/dev/null && break; sleep 0.2; done
TOKEN=$(grep -o 'nop_[A-Za-z0-9]*' /tmp/flows-c1-serve.out | head -1)
FROM=$(date -u -d '-31 days' +%Y-%m-%dT%H:%M:%SZ)
for path in "/flows?protocol=UDP" "/flows?remote_port=443" "/flows?remote_ip=52." "/flows?machine=PAR-LT-0001" "/flows?direction=inbound" \
    "/flows/summary?from=$FROM" "/flows/destinations?from=$FROM" \
    "/flows/explore?period=30d&dims=pays,operateur,service&filter=sens%20%3D%20outbound%20et%20pays%20!%3D%20FR"; do
    printf '%-100s ' "$path"
    wrk -t1 -c1 -d"$DURATION" --latency -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$PORT/api/v1$path" \
        | awk '/^ +50%/{p50=$2} /^ +99%/{p99=$2} /Requests\/sec/{rps=$2} END{printf "p50 %-9s p99 %-9s %8s req/s\n", p50, p99, rps}'
done
grep -E 'VmHWM|VmRSS|RssAnon|RssFile' /proc/$PID/status | tr -s ' \t' ' ' | paste -sd' '
