#!/usr/bin/env bash
# The Lambda packages, measured (bench/lambda-results.md):
#  - every function through `sam build`, as deployed (arm64): the build's time, each
#    bootstrap's architecture and its size zipped as SAM uploads it (deflate);
#  - the same functions and the hello-world baseline (bench/hello, which makes the functions'
#    token read) built for x86_64 with the same profile, then their cold starts side by side
#    over HTTPS with a local CA (bench/cold_start.py, 20 each; TLS=0 for plain HTTP).
# Needs what infra/README.md lists for `sam build` (aws-sam-cli, cargo-lambda, ziglang, the
# aarch64-unknown-linux-gnu Rust target) and the test command's .venv (moto). BUILD_DIR
# measures an existing `sam build` output instead of building.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-}
if [ -z "$build" ]; then
  echo "== sam build, every function (arm64)"
  started=$(date +%s)
  (cd infra && sam build >/dev/null)
  echo "   $(( $(date +%s) - started )) s"
  build=infra/.aws-sam/build
fi
python3 - "$build" <<'PY'
import io, os, subprocess, sys, zipfile
build = sys.argv[1]
print("| function | bootstrap | size (MB) | zipped (MB) |")
print("|---|---|---|---|")
for d in sorted(os.listdir(build)):
    path = os.path.join(build, d, "bootstrap")
    if not os.path.exists(path):
        continue
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.write(path, "bootstrap")
    arch = subprocess.run(["file", "-b", path], capture_output=True, text=True).stdout.split(",")[1].strip()
    print(f"| {d.removesuffix('Function').lower()} | {arch} | {os.path.getsize(path) / 1e6:.2f} | {len(buf.getvalue()) / 1e6:.2f} |")
PY
echo "== x86_64 builds of the functions and the baseline, then cold starts"
cargo lambda build --release --workspace --exclude netops >/dev/null 2>&1
cargo build -q -p netops
# moto (the DynamoDB-protocol server of the cold starts) and cryptography (its local CA) are in
# the test command's venv.
.venv/bin/python bench/cold_start.py target/lambda 20
