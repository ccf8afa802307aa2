"""The OpenAPI document: valid OpenAPI 3.1, clean under a linter, and true to the running
server under schemathesis (no 5xx, every answer's status and body as documented)."""

import json
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest
from openapi_spec_validator import validate

from conftest import ROOT

ARTIFACTS = ROOT / "artifacts"
REDOCLY = "@redocly/cli@2.77.0"


def dump(server) -> pathlib.Path:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / "openapi.json"
    res = server.get("/openapi.json", token="")
    assert res.status_code == 200
    path.write_bytes(res.content)
    return path


def test_document_is_valid_openapi_3_1(server):
    doc = json.loads(dump(server).read_text())
    assert doc["openapi"].startswith("3.1")
    assert doc["info"]["version"] == "1.7.0"
    validate(doc)


@pytest.mark.skipif(shutil.which("npx") is None, reason="npx comes with Node.js")
def test_document_passes_the_linter_without_errors(server, tmp_path):
    path = dump(server)
    config = tmp_path / "redocly.yaml"
    # The recommended rules; a public API on a relative server URL is intended.
    config.write_text("extends:\n  - recommended\nrules:\n  no-server-example.com: off\n  info-license: off\n")
    out = subprocess.run(
        ["npx", "--yes", REDOCLY, "lint", str(path), "--config", str(config), "--format", "stylish"],
        capture_output=True, text=True, timeout=600,
    )
    print(out.stdout[-5000:], out.stderr[-2000:])
    assert out.returncode == 0, out.stdout[-5000:]


# The checks of the run, in a configuration file: the one check that cannot hold for one
# operation is turned off there alone (the command line would turn it on for all).
SCHEMATHESIS_CONFIG = """
[checks]
enabled = false
not_a_server_error.enabled = true
status_code_conformance.enabled = true
response_schema_conformance.enabled = true
content_type_conformance.enabled = true
negative_data_rejection.enabled = true

# POST /mcp is JSON-RPC: a message with invalid params is answered in HTTP 200 with a
# JSON-RPC error (-32602), as the protocol requires, not with an HTTP 4xx. Its unreadable
# bodies and invalid messages do get 400, which the other checks verify.
[[operations]]
include-operation-id = "mcp"
checks.negative_data_rejection.enabled = false
"""


def test_schemathesis_finds_no_server_error_and_no_undocumented_answer(unlimited_server, tmp_path):
    """Every operation, with valid and invalid inputs (positive and negative modes), and the
    stateful phase that follows the document's links from a list to its items' routes: no
    5xx, every status documented, every body and content type as documented, every invalid
    input refused with a 4xx (an empty value of a known parameter included), at least 5,000
    cases."""
    base = unlimited_server.base_url
    config = tmp_path / "schemathesis.toml"
    config.write_text(SCHEMATHESIS_CONFIG)
    out = subprocess.run(
        [
            os.path.join(os.path.dirname(sys.executable), "schemathesis"),
            "--config-file", str(config),
            "run", f"{base}/openapi.json",
            "--url", base,
            "-H", f"Authorization: Bearer {unlimited_server.token}",
            "--mode", "all",
            "--max-examples", os.environ.get("NETOPS_SCHEMATHESIS_EXAMPLES", "50"),
            "--seed", "20261122",
            "--generation-deterministic",
            "--workers", "1",
            "--phases", "examples,coverage,fuzzing,stateful",
            "--no-color",
            "--report", "junit", "--report-dir", str(ARTIFACTS / "schemathesis"),
        ],
        capture_output=True, text=True, timeout=1800,
        # Collect batches are NDJSON, which schemathesis serializes through this hook.
        env=dict(os.environ, SCHEMATHESIS_HOOKS=str(pathlib.Path(__file__).with_name("schemathesis_hooks.py"))),
    )
    print(out.stdout[-20000:])
    assert out.returncode == 0, out.stdout[-20000:]
    cases = re.search(r"Test cases:\s+(\d+) generated", out.stdout)
    assert cases and int(cases.group(1)) >= int(os.environ.get("NETOPS_SCHEMATHESIS_MIN_CASES", "5000")), out.stdout[-3000:]
    tested = re.search(r"Selected: (\d+)/(\d+)\s+Tested: (\d+)", out.stdout)
    assert tested and tested.group(1) == tested.group(2) == tested.group(3), out.stdout[-3000:]
    assert "✅ Stateful" in out.stdout, out.stdout[-3000:]
