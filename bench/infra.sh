#!/usr/bin/env bash
# Benchmarks of the firewall, DNS, files and network routes (issue 8) on a big embedded db.
#
#   bench/infra.sh [DB] [MACHINES] [DAYS] [BULK]
#
# BULK is NETOPS_SEED_FIREWALL_BULK: allowed/denied firewall events per machine and day of
# the last 7 days, on top of the demo mix (each machine sits behind two devices, so about
# 2 x BULK x MACHINES events a day). 1430 with 1000 machines gives about 20 million events
# in the last 7 days; DAYS=30 gives the 30 days of firewall data around them.
set -euo pipefail
cd "$(dirname "$0")/.."
DB=${1:-/tmp/infra-bench.db}
MACHINES=${2:-1000}
DAYS=${3:-30}
BULK=${4:-1430}
PORT=${PORT:-18088}
# BIN: an already built release binary (default: build one here).
if [ -z "${BIN:-}" ]; then
  cargo build --release -p netops
  BIN=target/release/netops
fi
if [ ! -f "$DB" ]; then
  time NETOPS_SEED_FIREWALL_BULK=$BULK "$BIN" seed --db "$DB" --machines "$MACHINES" --days "$DAYS"
fi
sqlite3 "$DB" "select series, count(*) from series where tenant='acme' and series like 'firewall_events%' group by series" 2>/dev/null || true
NETOPS_RATE_LIMIT=100000000 RUST_LOG=warn "$BIN" serve --db "$DB" --addr 127.0.0.1:$PORT > /tmp/infra-bench-serve.log 2>&1 &
SERVER=$!
trap 'kill $SERVER' EXIT
for _ in $(seq 50); do grep -q 'token:' /tmp/infra-bench-serve.log && break; sleep 0.2; done
TOKEN=$(grep -o 'nop_[A-Za-z0-9]*' /tmp/infra-bench-serve.log | head -1)
BASE=http://127.0.0.1:$PORT/api/v1
FW=$(curl -s -H "Authorization: Bearer $TOKEN" "$BASE/firewall/devices" | grep -o '"id":[0-9]*' | head -1 | cut -d: -f2)
ROUTES=(
  "/firewall/devices"
  "/firewall/events"
  "/firewall/events?category=deny"
  "/firewall/events?category=vpn&period=7d"
  "/firewall/events?action=failure&period=7d"
  "/firewall/events?device_id=$FW&period=7d"
  "/firewall/events?category=ids&device_id=$FW&period=7d"
  "/firewall/traffic"
  "/firewall/traffic?period=7d"
  "/firewall/traffic?period=30d"
  "/firewall/threats"
  "/firewall/report"
  "/firewall/report?period=30d"
  "/dns/resolutions"
  "/dns/resolutions?machine=PAR-LT-0001&period=7d"
  "/dns/top-domains"
  "/dns/top-domains?period=7d"
  "/dns/threats?period=30d"
  "/dns/server-queries?suspicious=1"
  "/files/events"
  "/files/events?type=delete&period=30d"
  "/files/summary"
  "/files/summary?period=7d"
  "/network/sites"
  "/network/devices?type=switch"
  "/network/devices/1002"
  "/network/devices/1002/metrics?period=30d"
  "/network/tunnels"
  "/network/alerts?status=all&period=30d"
  "/network/ports?port=3389"
)
printf '%-58s %10s %10s %10s\n' route p50 p99 req/s
for r in "${ROUTES[@]}"; do
  out=$(wrk -t${THREADS:-2} -c${CONNS:-8} -d${DURATION:-10s} --latency -H "Authorization: Bearer $TOKEN" "$BASE$r")
  p50=$(echo "$out" | awk '$1=="50%"{print $2}')
  p99=$(echo "$out" | awk '$1=="99%"{print $2}')
  rps=$(echo "$out" | awk '/Requests\/sec/{print $2}')
  printf '%-58s %10s %10s %10s\n' "$r" "$p50" "$p99" "$rps"
done
