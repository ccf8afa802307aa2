#!/usr/bin/env bash
# Issue 39, item 4: GET /machines?limit=100 through `netops serve` (release, embedded store,
# demo data, log at its default level, 150 tokens of tenant acme in rotation, rate limit out of
# the way) against a bare axum server answering the same bytes (local/examples/bare.rs), with
# wrk (1 thread, 16 connections), the two sides in turn within the same run: the machine is
# shared, so only their ratio means much. With PROFILE=1, `perf record` samples the server
# during one more run and writes the hottest functions to bench/throughput-profile.txt.
# Needs wrk (apt-get install wrk), and perf for PROFILE=1. Symbols for the profile:
#   CARGO_PROFILE_RELEASE_STRIP=false CARGO_PROFILE_RELEASE_DEBUG=line-tables-only bench/throughput.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
SECONDS_EACH=${SECONDS_EACH:-10}
cargo build --release -q -p netops --bin netops --example bare
# shellcheck source=bench/_demo_server.sh
source bench/_demo_server.sh
for i in $(seq 150); do
  "$bin" token create --db "$dir/netops.db" --tenant acme --name "bench-$i" --scopes all
done >"$dir/tokens"
url="$base/machines?limit=100"
curl -fsS -H "Authorization: Bearer $token" "$url" -o "$dir/body.json"

target/release/examples/bare 127.0.0.1:0 "$dir/body.json" >"$dir/bare.out" &
pids+=("$!")
for _ in $(seq 100); do grep -q '^listening' "$dir/bare.out" 2>/dev/null && break; sleep 0.1; done
bare="http://$(sed -n 's/^listening on //p' "$dir/bare.out")/machines?limit=100"
cmp <(curl -fsS "$bare") "$dir/body.json"

# One token per request, in turn (wrk's Lua).
cat >"$dir/rotate.lua" <<LUA
local tokens, i = {}, 0
for line in io.lines("$dir/tokens") do tokens[#tokens + 1] = line end
request = function()
  i = i % #tokens + 1
  return wrk.format(nil, nil, {["Authorization"] = "Bearer " .. tokens[i]})
end
LUA

# requests/s and p99 (ms) of one wrk run.
run() {
  wrk -t1 -c16 -d"${SECONDS_EACH}s" --latency "$@" | awk '
    /Requests\/sec/ { rps = $2 }
    /^ +99%/ { p99 = $2 }
    /Non-2xx/ { bad = $NF }
    END { printf "%s %s %s\n", rps, p99, bad == "" ? 0 : bad }'
}
echo "== $(wc -c <"$dir/body.json") bytes, $(nproc) cores; $(uptime | sed 's/.*load/load/')"
printf '%-8s %-12s %-10s %-10s %s\n' round side 'req/s' p99 non-2xx
for r in $(seq "$ROUNDS"); do
  read -r b_rps b_p99 b_bad < <(run "$bare")
  read -r n_rps n_p99 n_bad < <(run -s "$dir/rotate.lua" "$url")
  printf '%-8s %-12s %-10s %-10s %s\n' "$r" bare "$b_rps" "$b_p99" "$b_bad" "$r" netops "$n_rps" "$n_p99" "$n_bad"
  awk -v n="$n_rps" -v b="$b_rps" 'BEGIN { printf "         ratio        %.2f\n", n / b }'
done

if [ "${PROFILE:-0}" = 1 ]; then
  # DWARF call graphs: the release build keeps no frame pointers.
  perf record -F 999 --call-graph dwarf,16384 -p "$server" -o "$dir/perf.data" -- sleep "$SECONDS_EACH" 2>/dev/null &
  recording=$!
  run -s "$dir/rotate.lua" "$url" >/dev/null
  wait "$recording"
  {
    echo "# perf record -F 999 -g of netops serve under wrk -t1 -c16 on GET /machines?limit=100"
    echo "# (150 tokens in rotation); self time by function, then time including callees."
    perf report -i "$dir/perf.data" --no-children --sort symbol --stdio -g none 2>/dev/null \
      | grep -E '^ +[0-9]' | sed -E 's/[[:space:]]+$//' | head -40
    echo
    echo "# Including callees, the stages of the request (children, self)"
    perf report -i "$dir/perf.data" --children --sort symbol --stdio -g none 2>/dev/null \
      | grep -E '^ +[0-9]' | sed -E 's/[[:space:]]+$//' \
      | grep -E 'docs::read_docs|sql::parse_json|sqlite3_step|from_value<|time::to_vec|strong_etag|http::gate::|compression::future|__GI___writev|authenticate|tracing_subscriber' \
      | head -30
  } >bench/throughput-profile.txt
  echo "profile: bench/throughput-profile.txt"
fi
