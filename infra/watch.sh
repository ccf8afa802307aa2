#!/usr/bin/env bash
# Serves every route locally at its real path, each through its own Lambda function, with
# `cargo lambda watch` and the router of the root Cargo.toml
# ([workspace.metadata.lambda.watch.router]).
#
# Why not plain `cargo lambda watch`: it starts a function with `cargo run --bin <function>`,
# which only looks in the workspace's default members, and `default-members = ["local"]` keeps
# `cargo run` = `netops serve` (a contract). So the runtime APIs and the router run in
# cargo lambda (`--only-lambda-apis`) and this script starts each function binary against its
# own runtime API (`/.rt/<function>`), as cargo lambda would.
#
#   infra/watch.sh                      # http://127.0.0.1:9000/api/v1/..., store ./netops.db
#   NETOPS_DB=/tmp/x.db PORT=9100 infra/watch.sh
#
# The store is the one the usual variables name (NETOPS_STORE, NETOPS_DB, NETOPS_DYNAMODB_*);
# seed it first (`cargo run -- seed`) and create a token (`cargo run -- token create ...`).
set -euo pipefail
cd "$(dirname "$0")/.."
port=${PORT:-9000}
functions=$(sed -n 's/.*function = "\([a-z]*\)".*/\1/p' Cargo.toml | sort -u)

cargo build --workspace --bins
pids=()
cleanup() { for p in "${pids[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT INT TERM

cargo lambda watch --only-lambda-apis --invoke-address 127.0.0.1 --invoke-port "$port" &
pids+=($!)
sleep 2
for f in $functions; do
  AWS_LAMBDA_FUNCTION_NAME="$f" AWS_LAMBDA_FUNCTION_VERSION=1 AWS_LAMBDA_FUNCTION_MEMORY_SIZE=256 \
    AWS_LAMBDA_RUNTIME_API="http://127.0.0.1:$port/.rt/$f" NETOPS_LOG_FORMAT="${NETOPS_LOG_FORMAT:-text}" \
    "target/debug/$f" &
  pids+=($!)
done
echo "serving http://127.0.0.1:$port/api/v1 through: $(echo $functions | tr '\n' ' ')"
wait
