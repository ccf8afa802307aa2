#!/usr/bin/env bash
# The one test command: installs what the tests need on a fresh machine, runs every test,
# and stops whatever it started. `.ci/run` calls exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
# One build of a fresh clone: incremental compilation would only write gigabytes of caches
# that no later build reads.
export CARGO_INCREMENTAL=0

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# Each step says the space left on the disks of the repository and of the temporary folder:
# a step that fails for want of it shows so at once.
# Each step also says how long the one before it took, and the end says the last one's.
step_name="" step_started=0
step_took() {
  if [ -n "$step_name" ]; then echo "   ($step_name: $(( $(date +%s) - step_started )) s)"; fi
}
step() {
  step_took
  step_name=$1 step_started=$(date +%s)
  echo "== $1 ($(df -Ph . "${TMPDIR:-/tmp}" | awk 'NR > 1 { print $4 }' | sort -u | paste -sd /) free)"
}

step "tools: Debian packages, Python and Node.js tools, SAM CLI"
# Debian packages the checks use: pdftotext/pdftoppm (PDF report), Chromium (docs page),
# Node.js for the OpenAPI linter and the TypeScript client generator, faketime (the live demo
# data after days away), syslog-ng with its http() destination (a real shipper posting
# firewall syslog to the collection API, tests/api/shipper.rs), softflowd (NetFlow v9 and
# IPFIX exported from a capture into the site relay, relay/tests/relay.rs and, through the relay
# into netops serve, tests/api/relay.rs) and util-linux's
# logger (syslog into the relay, Debian's bsdutils, usually present).
missing=()
command -v pdftotext >/dev/null || missing+=(poppler-utils)
command -v chromium >/dev/null || missing+=(chromium)
command -v npx >/dev/null || missing+=(nodejs npm)
command -v faketime >/dev/null || missing+=(faketime)
command -v syslog-ng >/dev/null || missing+=(syslog-ng-core)
command -v softflowd >/dev/null || missing+=(softflowd)
command -v logger >/dev/null || missing+=(bsdutils)
# The http() destination is a module of its own.
[ -n "$(find /usr/lib/syslog-ng -name 'libhttp.so' 2>/dev/null)" ] || missing+=(syslog-ng-mod-http)
if ((${#missing[@]})); then
  echo "== installing ${missing[*]}"
  as_root apt-get update -qq
  # --no-install-recommends: syslog-ng's recommended logrotate and the like are not needed,
  # and Debian's policy keeps its daemon from starting (the test starts its own).
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Python tools in a local virtual environment.
if [ ! -x .venv/bin/python ]; then python3 -m venv .venv; fi
.venv/bin/pip install -q --disable-pip-version-check -r tests/python/requirements.txt
.venv/bin/pip install -q --disable-pip-version-check -r tests/requirements-aws.txt
# Client generators run on the OpenAPI document (tests/python/test_clients.py), the official
# TypeScript MCP client and the offline tokenizer (tests/python/test_mcp.py), pinned by
# tests/node/package-lock.json, in that folder only.
npm ci --prefix tests/node --no-audit --no-fund --loglevel=error
# SAM CLI, cargo-lambda and zig, as infra/README.md tells a user to install them.
if [ ! -x .venv-lambda/bin/python ]; then python3 -m venv .venv-lambda; fi
.venv-lambda/bin/pip install -q --disable-pip-version-check -r tests/requirements-lambda.txt
export PATH="$root/.venv-lambda/bin:$PATH"
if command -v rustup >/dev/null; then rustup target add aarch64-unknown-linux-gnu >/dev/null 2>&1; fi

# Services started for the tests are stopped on exit, whatever happens, and their logs removed.
pids=()
logs=$(mktemp -d -t netops-test.XXXXXX)
# A service's own children (the background build's cargo and linker) are stopped with it.
stop_tree() {
  local child
  for child in $(pgrep -P "$1" 2>/dev/null); do stop_tree "$child"; done
  kill "$1" 2>/dev/null || true
}
cleanup() {
  for p in "${pids[@]:-}"; do [ -n "$p" ] && stop_tree "$p"; done
  rm -rf "$logs"
}
trap cleanup EXIT

step "DynamoDB-protocol server (moto) for the AWS adapter"
moto_port=$(.venv/bin/python -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
.venv/bin/python tests/moto_server.py -H 127.0.0.1 -p "$moto_port" >"$logs/moto.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do
  if .venv/bin/python -c "import urllib.request as u; u.urlopen('http://127.0.0.1:$moto_port/moto-api/')" 2>/dev/null; then break; fi
  sleep 0.1
done
# Static fake credentials: the SDK signs, moto accepts anything; no instance metadata lookups.
export AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing AWS_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true
export NETOPS_TEST_DYNAMODB_ENDPOINT="http://127.0.0.1:$moto_port" NETOPS_REQUIRE_AWS_TESTS=1

# Snapshot tests (insta): a snapshot that does not match fails, whatever the machine's
# environment says, and nothing is written or accepted (.config/insta.yaml says the same).
export INSTA_UPDATE=no INSTA_FORCE_PASS=0
no_pending_snapshots() {
  local pending
  pending=$(git ls-files --others --exclude-standard -- '*.pending-snap' '*.snap.new')
  if [ -n "$pending" ]; then
    echo "pending snapshots left by the tests (a snapshot changed without review):"
    echo "$pending"
    exit 1
  fi
}

step "format and lints"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --quiet -- -D warnings
# The functions as they are packaged, without the local process's features.
cargo clippy --workspace --exclude netops --quiet -- -D warnings

step "Rust tests"
cargo build --workspace --bins --quiet
# The whole geolocation tables, as a user gets them (npm, the pinned lock; docs/geolocation.md):
# tests/api/geo.rs checks them through the real server and requires them here.
started=$(date +%s)
target/debug/netops geo refresh --out "$logs/netops-geo.bin"
export NETOPS_TEST_GEO_FILE="$logs/netops-geo.bin" NETOPS_REQUIRE_GEO_DATA=1
echo "   (geolocation tables: $(( $(date +%s) - started )) s)"
cargo test --workspace --quiet
no_pending_snapshots

# The packages' release build links with fat LTO in one codegen unit: long, and mostly on one
# core. It runs from here in the background at the lowest priority, beside the port suites, the
# reliability suite and the steps that wait on moto (one Python process): they keep their
# cores, the build takes what they leave, and the command waits for it before the Python tests.
# Functions through `sam build`, exactly as infra/README.md tells a user (15 of them took 18
# minutes on 2 cores, bench/lambda-results.md; tests/api/infra.rs keeps every function's build
# settings the same as these): fleet, the smallest module, and mcp, the biggest package (it
# runs every module's JSON reads). Each must be an arm64 package under its bound zipped: a
# dependency of fleet's weight again, or mcp linking what its tools never call, fails here.
package() {
  local function=$1 bound=$2 started
  echo "== sam build ${function} (arm64, under ${bound} MB zipped)"
  started=$(date +%s)
  (cd infra && SAM_CLI_TELEMETRY=0 sam build "$function" >/dev/null)
  .venv/bin/python - "infra/.aws-sam/build/$function/bootstrap" "$bound" <<'PY'
import io, os, sys, zipfile
path, bound = sys.argv[1], float(sys.argv[2])
with open(path, "rb") as f:
    head = f.read(20)
assert head[:4] == b"\x7fELF" and int.from_bytes(head[18:20], "little") == 183, "not an arm64 ELF"
buf = io.BytesIO()
with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
    z.write(path, "bootstrap")
zipped = len(buf.getvalue()) / 1e6
assert zipped < bound, f"{path}: {zipped:.2f} MB zipped, over {bound} MB"
print(f"   arm64 bootstrap, {os.path.getsize(path) / 1e6:.2f} MB, {zipped:.2f} MB zipped")
PY
  echo "   ($(( $(date +%s) - started )) s)"
}

sam_log="$logs/sam.log"
(
  renice -n 19 -p "$BASHPID" >/dev/null || true
  # fleet: 2.70 MB measured, mcp: 3.80 MB with OAuth (bench/lambda-results.md).
  package FleetFunction 3 && package McpFunction 4
) >"$sam_log" 2>&1 &
sam_pid=$!
pids+=("$sam_pid")

# The same tests of every storage port (tests/store/) on every adapter that serves it: the
# embedded store and the local process's counters here, DynamoDB on moto (tables of their own
# per test) below, beside the packages' build.
step "port conformance suite on the embedded store and the in-process counters"
cargo test -p netops --test store --quiet -- sqlite:: process::

step "reliability suite: the real netops serve under floods, faults and bad input"
rel_log="$logs/reliability.log"
if ! cargo test -p netops --test reliability --quiet -- --test-threads=1 --nocapture >"$rel_log" 2>&1; then
  cat "$rel_log"
  exit 1
fi
grep -oE '(reliability: .*|test result: .*)' "$rel_log"

step "port conformance suite on DynamoDB (moto)"
cargo test -p netops --test store --quiet -- dynamodb::

step "the API suite on the DynamoDB adapter: what only the adapter can break through HTTP"
# A clean server for this pass (every test app also has tables of its own).
.venv/bin/python -c "import urllib.request as u; u.urlopen(u.Request('$NETOPS_TEST_DYNAMODB_ENDPOINT/moto-api/reset', method='POST'))"
# The routes reach the store through its ports alone, and the port suite above holds every
# port to the same tests on both adapters: the whole API suite no longer runs twice. What runs
# here again, over DynamoDB, is what the adapter can still break through the HTTP layer:
# - every route once, through its own function's router as under Lambda, over the demo data
#   of both tenants seeded into the tables (events::);
# - the writes, whose changes and log entry land in one transaction or not at all: the write
#   log (writelog::), idempotency keys (idempotency::) and the conditional acknowledgements
#   of alerts (the ack tests of alerts::);
# - the agent loop end to end: the real `netops serve` over the tables and the real
#   `netops agent` against it (settings applied, an action's result, an offline expiry; 6 s);
# - the live tests of what the adapter itself decides: a producer's conditional change that
#   keeps an acknowledgement, a batch resumed after its rollups without counting twice, an
#   acknowledgement kept by the producers, each over a small tenant of its own (8 machines,
#   2 days: a whole demo tenant took moto minutes to load, four times over). The catch-ups (two days of every module read back,
#   the hours' counts, alerts opening and resolving, NetDiag's episodes, the same data however
#   time is cut) depend on the producers, not on the store, whose writes and reads they make
#   the port suite holds to the same tests on both adapters; on moto each took minutes.
# The adapter's own tests (aws::), its faults (dynamo_faults::, which test the 6 s budget of a
# DynamoDB operation), its costs at scale (scale::) and the IAM check of every function's
# keys (infra::every_function_reaches_only_the_dynamodb_keys_its_policy_admits) reach moto
# whatever store the suite runs on: they ran with the Rust tests.
# moto is one Python process: a week of a big tenant's rollups can take it longer than the 6 s
# a DynamoDB operation is given, hence 30 s here.
NETOPS_TEST_STORE=dynamodb NETOPS_DYNAMODB_TIMEOUT_SECS=30 cargo test -p netops --test api --quiet -- \
  events:: writelog:: idempotency:: \
  live::a_producer_change_keeps_an_acknowledgement_made_since_its_read \
  live::a_batch_stopped_after_its_rollups_is_resumed_without_counting_twice \
  live::an_acknowledgement_made_through_the_api_survives_the_producers \
  alerts::acking_ alerts::ack_ alerts::concurrent_acks_ alerts::every_ack_ \
  agent::the_real_server_and_agent_close_the_loop_on_the_suites_store
no_pending_snapshots

step "SAM template"
.venv/bin/cfn-lint infra/template.yaml
# With an OAuth issuer for the MCP endpoint (its audience is then required without a domain).
.venv/bin/cfn-lint infra/template.yaml --parameters OAuthIssuer=https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_Example \
  OAuthAudience=https://abc123.execute-api.eu-west-1.amazonaws.com/api/v1/mcp
# With the optional custom domain as well (its resources exist only with it).
.venv/bin/cfn-lint infra/template.yaml --parameters DomainName=api.example.com \
  CertificateArn=arn:aws:acm:eu-west-1:123456789012:certificate/0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b

step "the packages' build (started in the background after the Rust tests)"
if ! wait "$sam_pid"; then
  cat "$sam_log"
  exit 1
fi
cat "$sam_log"

step "Python tests against the real server"
# The Lambda runtime loop of a function binary is tried over an embedded file, so the fleet
# and scheduled pass binaries are built with the one switch that links SQLite into a function
# (netops-lambda/embedded), as `cargo lambda watch` builds the functions.
cargo build --quiet -p netops-fleet -p netops-pass --features netops-lambda/embedded
NETOPS_BIN="$root/target/debug/netops" NETOPS_REQUIRE_LAMBDA_TOOLS=1 .venv/bin/python -m pytest -q --durations=15 tests/python
step_took
