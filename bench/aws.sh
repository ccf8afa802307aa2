#!/usr/bin/env bash
# Seeding throughput of the DynamoDB adapter into moto (the cost driver of the API suite's
# DynamoDB pass), and the demo seed time. Usage: bench/aws.sh [MACHINES]
set -euo pipefail
cd "$(dirname "$0")/.."
machines=${1:-5000}
[ -x .venv/bin/moto_server ] || .venv/bin/pip install -q -r tests/requirements-aws.txt
cargo build --release -p netops --quiet
port=$(.venv/bin/python -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
.venv/bin/python tests/moto_server.py -H 127.0.0.1 -p "$port" >/dev/null 2>&1 &
moto=$!
trap 'kill $moto' EXIT
sleep 2
export AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing AWS_REGION=us-east-1
export NETOPS_DYNAMODB_ENDPOINT="http://127.0.0.1:$port"
echo "== demo seed (60 machines, 30 days) into moto"
NETOPS_DYNAMODB_TABLE_PREFIX=demo- target/release/netops seed --store dynamodb
echo "== $machines machines into moto"
NETOPS_DYNAMODB_TABLE_PREFIX=big- target/release/netops seed --store dynamodb --machines "$machines" --days 1
