"""Cold starts of every function against the hello-world baseline, in one run under the same
Lambda Runtime API stand-in (tests/python/lambda_runtime.py).

Usage: python bench/cold_start.py [LAMBDA_DIR] [RUNS]
LAMBDA_DIR holds <name>/bootstrap for every function to measure and for `hello` (what `cargo
lambda build --release --workspace --exclude netops` writes to target/lambda); RUNS defaults
to 20. Needs moto and cryptography (the test command's .venv) and a netops binary (NETOPS_BIN,
default target/debug/netops).

Each function runs as deployed: DynamoDB store (moto here, on 127.0.0.1), JSON logs, the
template's RUST_LOG. The endpoint is HTTPS with a certificate of a local CA made here
(tests/python/local_tls.py), which every binary trusts through NETOPS_EXTRA_CA_FILE besides
Amazon's roots, so each cold start pays a TLS handshake, as on AWS: by default through a
proxy that keeps connections alive as DynamoDB does (moto's own server closes each one after
its answer); TLS=moto has moto serve HTTPS itself (a handshake per request), TLS=0 keeps
plain HTTP.
The first event is `GET /api/v1/me` with a valid token: every function looks the token up and
counts the call (two DynamoDB requests), then fleet answers 200 and the others 404 (not their
route). The baseline, bench/hello, makes the same token read (one GetItem, through the same
adapter and SDK configuration built at init) and answers 200. Two times per cold start, from
the process's start:
- init: until the function first asks the Runtime API for an event (Lambda's Init Duration);
- answer: until its answer is posted back.
Runs are interleaved, one of each binary per round, so load on the machine hits all alike.
Prints a Markdown table; ratios are to the hello world's medians.

CURSOR_KEYS=secretsmanager: the functions read their cursor key ring from a Secrets Manager
secret (on the same moto) at start, as deployed, instead of from NETOPS_CURSOR_SECRET: the
difference of the two runs is what the ring costs a cold start (the hello world reads no
secret).
"""

import os
import statistics
import subprocess
import sys
import tempfile

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(root, "tests", "python"))
from lambda_runtime import apigw_event, run_function  # noqa: E402
from local_tls import make_certificates, start_moto, stop  # noqa: E402

lambda_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "target", "lambda")
runs = int(sys.argv[2]) if len(sys.argv) > 2 else 20
netops = os.environ.get("NETOPS_BIN", os.path.join(root, "target", "debug", "netops"))
front = os.environ.get("TLS", "proxy")
tls = front != "0"

names = sorted(n for n in os.listdir(lambda_dir) if os.path.exists(os.path.join(lambda_dir, n, "bootstrap")))
if "hello" not in names:
    sys.exit(f"{lambda_dir}/hello/bootstrap is missing: build the baseline with the functions")

log = tempfile.TemporaryFile()
certs = tempfile.TemporaryDirectory()
certificates = make_certificates(certs.name) if tls else None
procs, endpoint = start_moto(log, certificates, front)
try:
    env = {
        "NETOPS_STORE": "dynamodb",
        "NETOPS_DYNAMODB_ENDPOINT": endpoint,
        "NETOPS_DYNAMODB_TABLE_PREFIX": "bench-",
        "NETOPS_CURSOR_SECRET": "cold-start-bench",
        "NETOPS_LOG_FORMAT": "json",
        "RUST_LOG": "info,netops_shared::http=warn",
        "AWS_REGION": "eu-west-3",
        "AWS_ACCESS_KEY_ID": "bench",
        "AWS_SECRET_ACCESS_KEY": "bench",
        "AWS_EC2_METADATA_DISABLED": "true",
    }
    if tls:
        env["NETOPS_EXTRA_CA_FILE"] = certificates["ca"]
    if os.environ.get("CURSOR_KEYS") == "secretsmanager":
        import boto3

        sm = boto3.client("secretsmanager", endpoint_url=endpoint, region_name="eu-west-3",
                          verify=certificates["ca"] if tls else None,
                          aws_access_key_id="bench", aws_secret_access_key="bench")
        arn = sm.create_secret(Name="bench-cursor", SecretString="cold-start-bench")["ARN"]
        del env["NETOPS_CURSOR_SECRET"]
        env.update({"NETOPS_CURSOR_SECRET_ARN": arn, "NETOPS_SECRETS_ENDPOINT": endpoint})
    # The tables (created by the CLI when missing) and a token.
    token = subprocess.run([netops, "token", "create", "--tenant", "acme", "--name", "bench", "--scopes", "all"],
                           env=dict(os.environ, **env), check=True, capture_output=True, text=True).stdout.strip()
    event = apigw_event("/api/v1/me", token)

    init = {n: [] for n in names}
    answer = {n: [] for n in names}
    for _ in range(runs):
        for name in names:
            started, api = run_function(os.path.join(lambda_dir, name, "bootstrap"), [event], env)
            answered, response = api.responses["req-0"]
            expected = {"hello": 200, "fleet": 200}.get(name, 404)
            assert response["statusCode"] == expected, (name, response)
            init[name].append((api.first_next - started) * 1000)
            answer[name].append((answered - started) * 1000)
finally:
    stop(procs)
    certs.cleanup()

med = statistics.median
base_init, base_answer = med(init["hello"]), med(answer["hello"])
over = f"HTTPS ({front})" if tls else "plain HTTP"
print(f"{runs} cold starts each over {over}; medians in ms (min-max), ratio to hello world")
print()
print("| binary | package (MB) | init | init / hello | first answer | answer / hello |")
print("|---|---|---|---|---|---|")
for name in ["hello"] + [n for n in names if n != "hello"]:
    i, a = init[name], answer[name]
    size = os.path.getsize(os.path.join(lambda_dir, name, "bootstrap")) / 1e6
    print(f"| {name} | {size:.2f} | {med(i):.1f} ({min(i):.1f}-{max(i):.1f}) | {med(i) / base_init:.2f} "
          f"| {med(a):.1f} ({min(a):.1f}-{max(a):.1f}) | {med(a) / base_answer:.2f} |")
