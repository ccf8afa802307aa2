#!/usr/bin/env bash
# The one test command: installs what the tests need on a fresh machine, runs every test,
# and stops whatever it started. `.ci/run` calls exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# Debian packages the checks use: pdftotext/pdftoppm (PDF report), Chromium (docs page),
# Node.js for the OpenAPI linter.
missing=()
command -v pdftotext >/dev/null || missing+=(poppler-utils)
command -v chromium >/dev/null || missing+=(chromium)
command -v npx >/dev/null || missing+=(nodejs npm)
if ((${#missing[@]})); then
  echo "== installing ${missing[*]}"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# Python tools in a local virtual environment.
if [ ! -x .venv/bin/python ]; then python3 -m venv .venv; fi
.venv/bin/pip install -q --disable-pip-version-check -r tests/python/requirements.txt

# Services started for the tests are stopped on exit, whatever happens.
pids=()
cleanup() { for p in "${pids[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

echo "== format and lints"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --quiet -- -D warnings

echo "== Rust tests"
cargo build --workspace --bins --quiet
cargo test --workspace --quiet

echo "== Python tests against the real server"
NETOPS_BIN="$root/target/debug/netops" .venv/bin/python -m pytest -q tests/python
