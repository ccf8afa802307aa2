#!/usr/bin/env bash
# The site relay's benchmark (bench/relay-results.md): a paced sender of IPFIX flow records
# and syslog lines over UDP (relay/examples/relay_bench.rs; softflowd cannot pace) into the
# release `netops-relay`, forwarding to a counting stub of the collection API on this machine.
# Flows alone, syslog alone, then both together; one JSON object per run.
#   bench/relay.sh [SECONDS] [FLOWS_PER_S] [SYSLOG_PER_S]
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_INCREMENTAL=0
seconds=${1:-20}
flows=${2:-20000}
syslog=${3:-20000}
cargo build --release --quiet -p netops-relay --bin netops-relay --example relay_bench
bin=target/release/netops-relay
bench=target/release/examples/relay_bench
echo "# net.core.rmem_max = $(cat /proc/sys/net/core/rmem_max 2>/dev/null || echo '?')"
echo "# flows alone";  "$bench" "$bin" "$seconds" "$flows" 0
echo "# syslog alone"; "$bench" "$bin" "$seconds" 0 "$syslog"
echo "# together";     "$bench" "$bin" "$seconds" "$flows" "$syslog"
