#!/usr/bin/env bash
# Shared by bench/inventory.sh, bench/security.sh and bench/databases.sh: seeds a big tenant
# once (1,000 machines, 5,000 accounts, 30 days), starts the release server, and runs wrk on
# each URL given on stdin (one path below /api/v1 per line), printing p50 and p99.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BIN="${BIN:-$ROOT/target/release/netops}"
DB="${DB:-/tmp/records-bench.db}"
PORT="${PORT:-28477}"
DURATION="${DURATION:-10s}"
THREADS="${THREADS:-2}"
CONNS="${CONNS:-8}"
[ -x "$BIN" ] || cargo build --release -p netops --manifest-path "$ROOT/Cargo.toml"
if [ ! -f "$DB" ]; then
  "$BIN" seed --db "$DB" --machines 1000 --days 30 >&2
fi
LOG="$(mktemp)"
NETOPS_RATE_LIMIT=100000000 RUST_LOG=warn "$BIN" serve --db "$DB" --addr "127.0.0.1:$PORT" >"$LOG" 2>&1 &
SERVER=$!
trap 'kill "$SERVER" 2>/dev/null || true; rm -f "$LOG"' EXIT
for _ in $(seq 1 100); do
  grep -q '^token: ' "$LOG" 2>/dev/null && break
  sleep 0.2
done
TOKEN="$(grep '^token: ' "$LOG" | head -1 | cut -d' ' -f2)"
BASE="http://127.0.0.1:$PORT/api/v1"
printf '%-70s %10s %10s %10s\n' "route" "p50" "p99" "req/s"
while read -r path; do
  [ -z "$path" ] && continue
  out="$(wrk -t"$THREADS" -c"$CONNS" -d"$DURATION" --latency -H "Authorization: Bearer $TOKEN" "$BASE$path")"
  p50="$(echo "$out" | awk '$1 == "50%" {print $2}')"
  p99="$(echo "$out" | awk '$1 == "99%" {print $2}')"
  rps="$(echo "$out" | awk '/Requests\/sec/ {print $2}')"
  non2xx="$(echo "$out" | awk '/Non-2xx/ {print $NF}')"
  printf '%-70s %10s %10s %10s %s\n' "$path" "$p50" "$p99" "$rps" "${non2xx:+NON-2XX: $non2xx}"
done
