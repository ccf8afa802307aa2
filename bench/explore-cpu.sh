#!/usr/bin/env bash
# The server's CPU time per /flows/explore request, for a loaded machine where wall times are
# noise: utime + stime of the server process over N sequential requests after one warm-up,
# per query, with the wall time of the fastest of them. Each answer is kept in OUT_DIR, so
# that two builds can be compared byte for byte on the same file (diff -r).
#
#   bash bench/explore-cpu.sh DB BIN OUT_DIR [N]
#
# DB is the reference file (bench/_reference_server.sh; seeded with the clock at BENCH_AT),
# BIN a release build of netops. The server runs with --no-live, so the file does not move
# between two runs.
set -euo pipefail
DB=$1 BIN=$2 OUT_DIR=$3 N=${4:-5}
PORT=${PORT:-18093}
BENCH_AT=${BENCH_AT:-2026-11-24 16:00:00}
CLOCK=(faketime -f "@$BENCH_AT")
mkdir -p "$OUT_DIR"
TOKEN=$("$BIN" token create --db "$DB" --tenant acme --name "cpu-$$-$RANDOM" --scopes all)
NETOPS_RATE_LIMIT=100000000 RUST_LOG=warn "${CLOCK[@]}" "$BIN" serve --no-live --db "$DB" \
  --addr "127.0.0.1:$PORT" >"$OUT_DIR/server.log" 2>&1 &
SERVER=$!
trap 'pkill -P $SERVER 2>/dev/null; kill $SERVER 2>/dev/null || true' EXIT
URL="http://127.0.0.1:$PORT/api/v1"
for _ in $(seq 1 300); do curl -fs "$URL/openapi.json" -o /dev/null && break; sleep 0.2; done
PID=$(pgrep -P $SERVER || echo $SERVER)
TICK=$(getconf CLK_TCK)
cpu() { awk '{print $14 + $15}' "/proc/$PID/stat"; }
get() { curl -fsS -H "Authorization: Bearer $TOKEN" "$URL/flows/explore?$1" -o "$2"; }

# A process and a user the data holds, for the filtered queries.
get "period=24h&dims=processus,utilisateur&limit=3" "$OUT_DIR/pick.json"
PROCESS=$(jq -r '.data.top[0].values.processus' "$OUT_DIR/pick.json")
USER_NAME=$(jq -r '.data.top[0].values.utilisateur' "$OUT_DIR/pick.json")
enc() { jq -rn --arg v "$1" '$v|@uri'; }
QUERIES=(
  "period=30d&dims=pays,operateur,service&filter=$(enc 'sens = outbound')"
  "period=24h&dims=interne,externe,port&filter=$(enc 'sens = outbound')"
  "period=30d&dims=interne,externe,port&filter=$(enc 'sens = outbound')"
  "period=24h&dims=processus,externe"
  "period=30d&dims=processus,externe"
  "period=24h&dims=utilisateur"
  "period=30d&dims=utilisateur"
  "period=24h&dims=interne,processus,utilisateur"
  "period=30d&dims=interne,processus,utilisateur"
  "period=7d&dims=utilisateur,interne&filter=$(enc "processus = $PROCESS")"
  "period=6h&dims=interne,sens&source=gateway"
  "period=1h&dims=externe,interne&metric=flows&filter=$(enc "utilisateur = $USER_NAME et sens = outbound")"
)
printf '%-100s %10s %10s\n' query "ms CPU" "best ms"
i=0
for q in "${QUERIES[@]}"; do
  i=$((i + 1))
  get "$q" "$OUT_DIR/$i.json"
  before=$(cpu)
  best=
  for _ in $(seq 1 "$N"); do
    ms=$(curl -fsS -o /dev/null -w '%{time_total}' -H "Authorization: Bearer $TOKEN" \
      "$URL/flows/explore?$q" | awk '{printf "%d", $1 * 1000}')
    if [ -z "$best" ] || [ "$ms" -lt "$best" ]; then best=$ms; fi
  done
  after=$(cpu)
  printf '%-100s %10s %10s\n' "$q" "$(( (after - before) * 1000 / TICK / N ))" "$best"
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
