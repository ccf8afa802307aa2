#!/usr/bin/env bash
# Issue-2 figures on the embedded store with the demo data:
#  - GET /machines?limit=100 through `netops serve` (release) at a fixed 1,000 requests/s
#    (oha -q 1000) and flat out (oha without -q), from a load generator on 127.0.0.1;
#  - the gate's cost per request (auth + rate limit), in process: cargo bench --bench gate.
# The Lambda packages (sizes, cold starts) are measured by bench/lambda.sh.
# Needs oha (cargo install oha) on PATH or in /opt/oha/bin.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/oha/bin:$PATH"
cargo build --release -q -p netops
db=$(mktemp -d)/bench.db
out=$(mktemp)
NETOPS_RATE_LIMIT=100000000 RUST_LOG=warn target/release/netops serve --db "$db" --addr 127.0.0.1:0 >"$out" &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
for _ in $(seq 100); do grep -q '^token:' "$out" 2>/dev/null && break; sleep 0.2; done
token=$(sed -n 's/^token: //p' "$out")
base=$(sed -n 's/^base URL: //p' "$out")
url="$base/machines?limit=100"
echo "== GET /machines?limit=100 at 1,000 requests/s for 20 s"
oha --no-tui -z 20s -q 1000 -c 16 -H "Authorization: Bearer $token" "$url" | sed -n '/Summary/,/Status code distribution/p'
echo "== GET /machines?limit=100 flat out for 10 s (16 connections)"
oha --no-tui -z 10s -c 16 -H "Authorization: Bearer $token" "$url" | sed -n '/Summary/,/Response time histogram/p'
echo "== gate cost in process"
cargo bench -q -p netops --bench gate 2>/dev/null | grep -E 'calls'
