#!/usr/bin/env bash
# tools/call overhead over the same REST call (issue 9: target < 100 µs).
# Release server over a seeded db; wrk on the REST route and on POST /mcp tools/call of the
# same route with the same arguments, one connection (latency) then 8 (throughput).
# Usage: bench/mcp.sh [duration]   (default 10s)
set -euo pipefail
cd "$(dirname "$0")/.."
dur=${1:-10s}
db=/tmp/mcp-bench.db
port=18977
bin=target/release/netops
[ -x "$bin" ] || cargo build --release -p netops
[ -f "$db" ] || "$bin" seed --db "$db" --machines 1000 --days 7
log=$(mktemp)
NETOPS_RATE_LIMIT=100000000 RUST_LOG=warn "$bin" serve --db "$db" --addr 127.0.0.1:$port >"$log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true; rm -f "$log" /tmp/mcp-bench-*.lua' EXIT
for _ in $(seq 100); do grep -q '^token:' "$log" && break; sleep 0.1; done
token=$(awk '/^token:/ {print $2}' "$log")
base=http://127.0.0.1:$port/api/v1
host=$(curl -s -H "Authorization: Bearer $token" "$base/machines?limit=1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["data"][0]["hostname"])')

lua() { # $1 file, $2 tool, $3 arguments JSON
  cat >"$1" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"$2","arguments":$3}}'
LUA
}
lua /tmp/mcp-bench-get.lua get_machine "{\"hostname\":\"$host\"}"
lua /tmp/mcp-bench-list.lua list_machines '{"limit":100}'
lua /tmp/mcp-bench-tools.lua x '{}'
sed -i 's/"method":"tools\/call".*/"method":"tools\/list"}'"'"'/' /tmp/mcp-bench-tools.lua

# Server CPU time (user + system, clock ticks): robust to other load on the machine.
hz=$(getconf CLK_TCK)
cpu() { awk '{print $14 + $15}' "/proc/$pid/stat"; }

run() { # label, conns, url, [script]
  local label=$1 c=$2 url=$3 script=${4:-}
  local args=(-t1 -c"$c" -d"$dur" --latency -H "Authorization: Bearer $token")
  [ "$c" -gt 1 ] && args=(-t2 -c"$c" -d"$dur" --latency -H "Authorization: Bearer $token")
  [ -n "$script" ] && args+=(-s "$script")
  local out before after n
  before=$(cpu)
  out=$(wrk "${args[@]}" "$url")
  after=$(cpu)
  n=$(awk '/requests in/ {print $1}' <<<"$out")
  printf '%-34s c=%-2s p50=%-9s p99=%-9s req/s=%-9s server CPU/req=%s us\n' "$label" "$c" \
    "$(awk '$1=="50%" {print $2}' <<<"$out")" "$(awk '$1=="99%" {print $2}' <<<"$out")" \
    "$(awk '/Requests\/sec/ {print $2}' <<<"$out")" "$(( (after - before) * 1000000 / hz / n ))"
}

echo "data: $db (acme 1000 machines), host $host, $dur per run"
for c in 1 8; do
  run "REST GET /machines/{hostname}" $c "$base/machines/$host"
  run "MCP tools/call get_machine" $c "$base/mcp" /tmp/mcp-bench-get.lua
  run "REST GET /machines?limit=100" $c "$base/machines?limit=100"
  run "MCP tools/call list_machines 100" $c "$base/mcp" /tmp/mcp-bench-list.lua
done
run "MCP tools/list (full scope)" 1 "$base/mcp" /tmp/mcp-bench-tools.lua
echo "tools/list bytes: $(curl -s -H "Authorization: Bearer $token" -d '{"jsonrpc":"2.0","id":1,"method":"tools/list"}' "$base/mcp" | wc -c)"

# The same comparison in process (no sockets, REST and MCP interleaved): the MCP code's own
# cost, least disturbed by other load on the machine.
cargo run --release -q -p netops-mcp --example overhead -- "$db" "${ITERATIONS:-20000}"
