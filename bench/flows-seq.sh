#!/usr/bin/env bash
# Sequential latency (one request at a time, N runs, median and max) of the flows routes,
# for a loaded machine where wrk's concurrency measures queueing more than service time.
# Also the server's CPU time per request (utime+stime from /proc), which the load of other
# processes does not inflate.
set -euo pipefail
cd "$(dirname "$0")/.."
DB=${DB:-/tmp/flows-bench.db}; PORT=${PORT:-18085}; N=${N:-15}
NETOPS_RATE_LIMIT=100000000 RUST_LOG=warn target/release/netops serve --db "$DB" --addr "127.0.0.1:$PORT" > /tmp/flows-seq-serve.out 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null || true' EXIT
for _ in $(seq 100); do grep -q 'nop_' /tmp/flows-seq-serve.out 2>/dev/null && break; sleep 0.2; done
TOKEN=$(grep -o 'nop_[A-Za-z0-9]*' /tmp/flows-seq-serve.out | head -1)
FROM=$(date -u -d '-31 days' +%Y-%m-%dT%H:%M:%SZ)
DEFAULT_PATHS=("/flows?protocol=UDP" "/flows?remote_port=443" "/flows?machine=PAR-LT-0001" "/flows?direction=inbound"
    "/flows/summary?from=$FROM" "/flows/summary?from=$FROM&machine=PAR-LT-0001"
    "/flows/destinations?from=$FROM" "/flows/destinations?from=$FROM&source=all"
    "/flows/talkers?period=30d"
    "/flows/explore?period=30d&dims=pays,operateur,service&filter=sens%20%3D%20outbound"
    "/flows/explore?period=30d&dims=pays,operateur,service&filter=sens%20%3D%20outbound%20et%20pays%20!%3D%20FR")
# PATHS="a b" measures other paths.
read -r -a LIST <<< "${PATHS:-}"
[ ${#LIST[@]} -gt 0 ] || LIST=("${DEFAULT_PATHS[@]}")
for path in "${LIST[@]}"; do
    cpu0=$(awk '{print $14+$15}' /proc/$PID/stat)
    times=$(for _ in $(seq "$N"); do curl -s -o /dev/null -w '%{time_total}\n' -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$PORT/api/v1$path"; done | sort -n)
    cpu1=$(awk '{print $14+$15}' /proc/$PID/stat)
    cpu=$(echo "($cpu1 - $cpu0) * 1000 / $(getconf CLK_TCK) / $N" | bc -l)
    med=$(echo "$times" | sed -n "$(( (N + 1) / 2 ))p"); max=$(echo "$times" | tail -1)
    printf '%-95s median %6.1f ms  max %6.1f ms  server CPU %6.1f ms/request\n' "$path" "$(echo "$med*1000" | bc)" "$(echo "$max*1000" | bc)" "$cpu"
done
