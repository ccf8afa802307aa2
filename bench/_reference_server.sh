#!/usr/bin/env bash
# Sourced by bench/routes.sh and bench/windows.sh: the release server over the reference
# tenant (1,000 machines, 31 days; DB, seeded when missing) on PORT, its clock pinned at
# BENCH_AT (faketime): the demo's office processes run by day, so a filter such as
# process=teams walks the whole night back from a night-time "now" (20 ms) and finds its page
# at once by day (0.7 ms). A DB seeded elsewhere must hold BENCH_AT. Sets TOKEN, URL and
# SERVER (stopped on exit); the server's output goes to OUT.
BIN=target/release/netops
BENCH_AT=${BENCH_AT:-2026-11-24 16:00:00}
CLOCK=(faketime -f "@$BENCH_AT")
[ -x "$BIN" ] || cargo build --release -p netops
[ -f "$DB" ] || "${CLOCK[@]}" "$BIN" seed --db "$DB" --machines 1000 --days 31 >&2
TOKEN=$("$BIN" token create --db "$DB" --tenant acme --name "bench-$$-$RANDOM" --scopes all)
NETOPS_RATE_LIMIT=100000000 RUST_LOG=warn "${CLOCK[@]}" "$BIN" serve --db "$DB" --addr "127.0.0.1:$PORT" >"$OUT" 2>&1 &
SERVER=$!
# faketime runs the server as its child: stop both.
trap 'pkill -P $SERVER 2>/dev/null; kill $SERVER 2>/dev/null || true' EXIT
URL="http://127.0.0.1:$PORT/api/v1"
for _ in $(seq 1 100); do curl -fs "$URL/openapi.json" -o /dev/null && break; sleep 0.2; done
# Another server on the port would be measured in its place.
kill -0 $SERVER 2>/dev/null || { echo "the server did not start: $(tail -1 "$OUT")" >&2; exit 1; }

# The server's peak memory.
server_peak() {
  awk '/VmHWM/ {print $2, $3}' "/proc/$(pgrep -P $SERVER)/status"
}
