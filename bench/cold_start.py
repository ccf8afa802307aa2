"""Cold starts of every function against the hello-world baseline, in one run under the same
Lambda Runtime API stand-in (tests/python/lambda_runtime.py).

Usage: python3 bench/cold_start.py [LAMBDA_DIR] [RUNS]
LAMBDA_DIR holds <name>/bootstrap for every function and for `hello` (what `cargo lambda build
--release --workspace --exclude netops` writes to target/lambda); RUNS defaults to 20.

A cold start is timed from the process's start to the answer of its first event posted back
to the Runtime API. The event is a request without a token, which every function answers
(401) from its gate without a store call: the time is what a function does before it can
answer (configuration, telemetry, SDK clients, router) plus the runtime loop, the part its
package and its init decide. The functions run as deployed (DynamoDB store, JSON logs, the
template's RUST_LOG); the store is never reached. Runs are interleaved, one of each binary per
round, so load on the machine hits all alike. Prints a Markdown table.
"""

import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "python"))
from lambda_runtime import apigw_event, run_function  # noqa: E402

root = os.path.join(os.path.dirname(__file__), "..")
lambda_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "target", "lambda")
runs = int(sys.argv[2]) if len(sys.argv) > 2 else 20

names = sorted(n for n in os.listdir(lambda_dir) if os.path.exists(os.path.join(lambda_dir, n, "bootstrap")))
if "hello" not in names:
    sys.exit(f"{lambda_dir}/hello/bootstrap is missing: build the baseline with the functions")

env = {
    "NETOPS_STORE": "dynamodb",
    "NETOPS_DYNAMODB_TABLE_PREFIX": "bench-",
    "NETOPS_CURSOR_SECRET": "cold-start-bench",
    "NETOPS_LOG_FORMAT": "json",
    "RUST_LOG": "info,netops_shared::http=warn",
    "AWS_REGION": "eu-west-3",
    "AWS_ACCESS_KEY_ID": "bench",
    "AWS_SECRET_ACCESS_KEY": "bench",
    "AWS_EC2_METADATA_DISABLED": "true",
}
event = apigw_event("/api/v1/me", "")
del event["headers"]["authorization"]

times = {n: [] for n in names}
for _ in range(runs):
    for name in names:
        started, api = run_function(os.path.join(lambda_dir, name, "bootstrap"), [event], env)
        answered, response = api.responses["req-0"]
        expected = 200 if name == "hello" else 401
        assert response["statusCode"] == expected, (name, response)
        times[name].append((answered - started) * 1000)

base = statistics.median(times["hello"])
print(f"| binary | package (MB) | median (ms) | min | max | / hello |")
print(f"|---|---|---|---|---|---|")
for name in ["hello"] + [n for n in names if n != "hello"]:
    t = times[name]
    size = os.path.getsize(os.path.join(lambda_dir, name, "bootstrap")) / 1e6
    print(f"| {name} | {size:.2f} | {statistics.median(t):.1f} | {min(t):.1f} | {max(t):.1f} | "
          f"{statistics.median(t) / base:.2f} |")
