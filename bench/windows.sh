#!/usr/bin/env bash
# Every GET route of bench/routes-results.md at its default window and at its longest allowed
# one, first page, one connection (wrk -t1 -c1: p50/p99 of one request without queueing), on
# the release build over the reference tenant (1,000 machines, 31 days). The longest window
# is asked as `from` the epoch: the server cuts it to the route's cap or to the retention
# (meta.window_capped); the routes whose window is a fixed list of periods get their longest.
# The server and its pinned clock: bench/_reference_server.sh.
# Usage: bench/windows.sh [DB] [DURATION]   (default /tmp/netops-bench-routes.db, 3s)
set -euo pipefail
cd "$(dirname "$0")/.."
DB=${1:-/tmp/netops-bench-routes.db}
DURATION=${2:-3s}
PORT=${PORT:-8721}
OUT=/tmp/netops-bench-windows.out
. bench/_reference_server.sh

# p50 and p99 of one path.
measure() {
  local out
  out=$(wrk -t1 -c1 -d"$DURATION" --latency -H "Authorization: Bearer $TOKEN" "$URL$1")
  printf '%s %s' "$(awk '$1 == "50%" {print $2}' <<<"$out")" "$(awk '$1 == "99%" {print $2}' <<<"$out")"
}

# Days of the window an answer applied, or "-" for a route without one.
window_days() {
  curl -s -H "Authorization: Bearer $TOKEN" "$URL$1" | python3 -c '
import json, sys
from datetime import datetime
try:
    meta = json.load(sys.stdin).get("meta", {})
except ValueError:
    # Not JSON (the PDF report): its window is the one asked.
    print("pdf")
    sys.exit()
w = meta.get("window")
if not w:
    print("-")
else:
    span = datetime.fromisoformat(w["to"].replace("Z", "+00:00")) - datetime.fromisoformat(w["from"].replace("Z", "+00:00"))
    print(f"{span.total_seconds() / 86400:g}d" + ("*" if meta.get("window_capped") else ""))
'
}

printf '%-72s %9s %9s %7s | %9s %9s %7s\n' route "def p50" "def p99" window "long p50" "long p99" window
grep -E '^/[a-z]' bench/routes-results.md | awk '{print $1}' | awk '!seen[$0]++' | while read -r path; do
  base=$(sed -E 's/([?&])(period|from|to)=[^&]*/\1/g; s/&&+/\&/g; s/[?]&/?/; s/[?&]$//' <<<"$path")
  sep='?'; [[ "$base" == *\?* ]] && sep='&'
  case "$base" in
    */firewall/report*) long="$base${sep}period=90d" ;;
    */flows/explore*|*/report.pdf*) long="$base${sep}period=30d" ;;
    *) long="$base${sep}from=1970-01-01T00:00:00Z" ;;
  esac
  case "$base" in */firewall/report*|*/flows/explore*|*/report.pdf*) default="$path" ;; *) default="$base" ;; esac
  dw=$(window_days "$default")
  read -r d50 d99 <<<"$(measure "$default")"
  if [ "$dw" = "-" ]; then
    printf '%-72s %9s %9s %7s | %9s %9s %7s\n' "$default" "$d50" "$d99" "$dw" - - -
  else
    lw=$(window_days "$long")
    read -r l50 l99 <<<"$(measure "$long")"
    printf '%-72s %9s %9s %7s | %9s %9s %7s\n' "$default" "$d50" "$d99" "$dw" "$l50" "$l99" "$lw"
  fi
done
echo "server peak memory: $(server_peak)"
