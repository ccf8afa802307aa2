#!/usr/bin/env bash
# Sourced by bench/throughput.sh and bench/collect.sh after `cargo build --release`: `netops
# serve` (release) over a demo store seeded afresh in a temporary folder, rate limit out of
# the way. Sets bin, dir (the folder), server (its pid, with every pid in pids stopped on
# exit), base (its base URL) and token (an `all` token of tenant acme).
bin=target/release/netops
dir=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$dir"' EXIT

NETOPS_RATE_LIMIT=100000000 "$bin" serve --db "$dir/netops.db" --addr 127.0.0.1:0 >"$dir/out" 2>"$dir/log" &
server=$!
pids+=("$server")
for _ in $(seq 900); do grep -q '^token:' "$dir/out" 2>/dev/null && break; sleep 0.2; done
base=$(sed -n 's/^base URL: //p' "$dir/out")
token=$(sed -n 's/^token: //p' "$dir/out")
