#!/usr/bin/env bash
# The live demo data (docs/demo.md): seeds a file at the default size, then starts
# `netops serve` once per simulated day under faketime (+1d, +2d, ... +DAYS d), each start
# catching up the day since the last one before it prints its banner, and stops it. Prints
# per day: the file's size (with its write-ahead log), the catch-up's wall time and the
# server's CPU time until its banner (the catch-up, plus a start's fixed cost, measured once
# with nothing to catch up and subtracted). A day of catch-up is 24 hours of live production,
# so CPU and disk per hour of live data are the day's figures divided by 24.
#
#   bash bench/live.sh                         # 45 days, retention 90 days (the embedded default)
#   RETENTION=30 bash bench/live.sh            # the plateau: data older than 30 days leaves
#
# Needs libfaketime (Debian package faketime). BIN defaults to the debug build.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BIN="${BIN:-$ROOT/target/debug/netops}"
DAYS="${DAYS:-45}"
RETENTION="${RETENTION:-90}"
[ -x "$BIN" ] || cargo build -p netops --manifest-path "$ROOT/Cargo.toml"
# libfaketime preloaded into the server itself (the faketime command would run it as a child).
LIB="$(ls /usr/lib/*/faketime/libfaketime.so.1 2>/dev/null | head -1)"
[ -n "$LIB" ] || { echo "faketime is needed (apt-get install faketime)" >&2; exit 1; }
DIR="$(mktemp -d)"
DB="$DIR/live.db"
SERVER=""
trap '[ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null; rm -rf "$DIR"' EXIT
"$BIN" seed --db "$DB" >&2
TICK="$(getconf CLK_TCK)"

# One start at +N days: prints "wall_s cpu_s" of the start up to its banner.
start() {
  local log="$DIR/serve-$1.log" began ended ticks
  began="$(date +%s.%N)"
  NETOPS_RETENTION_DAYS="$RETENTION" RUST_LOG=warn LD_PRELOAD="$LIB" FAKETIME="+$1d" \
    "$BIN" serve --db "$DB" --addr 127.0.0.1:0 >"$log" 2>&1 &
  SERVER=$!
  until grep -q '^token: ' "$log" 2>/dev/null; do
    kill -0 "$SERVER" 2>/dev/null || { cat "$log" >&2; exit 1; }
    sleep 0.05
  done
  ended="$(date +%s.%N)"
  # utime + stime of the server.
  ticks="$(awk '{print $14 + $15}' "/proc/$SERVER/stat")"
  kill -TERM "$SERVER"
  wait "$SERVER" 2>/dev/null || true
  SERVER=""
  echo "$(echo "$ended - $began" | bc) $(echo "scale=2; $ticks / $TICK" | bc)"
}

size_mb() {
  local total=0 f
  for f in "$DB" "$DB-wal"; do
    [ -f "$f" ] && total=$((total + $(stat -c %s "$f")))
  done
  echo "scale=1; $total / 1048576" | bc
}

read -r _ base_cpu < <(start 0)
echo "retention ${RETENTION} days; a start with nothing to catch up: ${base_cpu} s of CPU"
printf 'day\tfile_MB\tcatch_up_s\tcpu_s\n'
printf '0\t%s\t-\t-\n' "$(size_mb)"
for d in $(seq 1 "$DAYS"); do
  read -r wall cpu < <(start "$d")
  printf '%s\t%s\t%s\t%s\n' "$d" "$(size_mb)" "$wall" "$(echo "$cpu - $base_cpu" | bc)"
done
