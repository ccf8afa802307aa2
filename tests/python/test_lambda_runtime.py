"""The function binaries under the Lambda Runtime API protocol: one binary polled by a stand-in
Runtime API, as on AWS, and every function through `cargo lambda watch` and `cargo lambda
invoke`, as a developer runs them from the repository root."""

import json
import os
import pathlib
import re
import shutil
import signal
import sqlite3
import subprocess
import tempfile
import time

import pytest
import requests

from conftest import BINARY, ROOT, dynamodb_env_and_token
from lambda_runtime import apigw_event, run_function
from lambda_watch import Watch, cargo_lambda

FLEET = pathlib.Path(os.environ.get("NETOPS_FLEET_BIN", ROOT / "target" / "debug" / "fleet"))
PASS = ROOT / "target" / "debug" / "pass"

# What EventBridge sends a function on a schedule.
SCHEDULED_EVENT = {
    "version": "0", "id": "5e1b6a3c-89f6-4d5c-9b1a-0c1d2e3f4a5b", "detail-type": "Scheduled Event",
    "source": "aws.events", "account": "123456789012", "time": "2026-11-29T00:00:00Z",
    "region": "eu-west-3", "resources": ["arn:aws:events:eu-west-3:123456789012:rule/netops-pass"],
    "detail": {},
}


def test_fleet_function_answers_api_gateway_events():
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "netops.db")
        subprocess.run([str(BINARY), "seed", "--db", db, "--days", "1"], check=True, capture_output=True)
        token = subprocess.run(
            [str(BINARY), "token", "create", "--tenant", "acme", "--name", "lambda", "--scopes", "read:machines", "--db", db],
            check=True, capture_output=True, text=True,
        ).stdout.strip()
        events = [
            apigw_event("/api/v1/machines", token, "limit=2"),
            apigw_event("/api/v1/machines/PAR-LT-0001", token),
            apigw_event("/api/v1/machines", "nop_" + "x" * 40),
        ]
        _, api = run_function(FLEET, events, {"NETOPS_DB": db})
        assert not api.errors, api.errors
        ok = api.responses["req-0"][1]
        assert ok["statusCode"] == 200
        body = json.loads(ok["body"])
        assert len(body["data"]) == 2 and body["meta"]["limit"] == 2
        headers = {k.lower(): v for k, v in ok["headers"].items()}
        assert headers["x-request-id"] == "cold-start-1"
        assert headers["x-ratelimit-limit"] == "600"
        one = api.responses["req-1"][1]
        assert one["statusCode"] == 200 and json.loads(one["body"])["data"]["hostname"] == "PAR-LT-0001"
        denied = api.responses["req-2"][1]
        assert denied["statusCode"] == 401 and json.loads(denied["body"])["error"] == "unauthorized"
        # One EMF line per request on stdout: CloudWatch reads its metrics from the line itself.
        lines = [json.loads(line) for line in api.stdout.splitlines() if line.startswith("{")]
        assert [(m["Route"], m["status"]) for m in lines] == [
            ("list_machines", 200), ("get_machine", 200), ("list_machines", 401)]
        for m in lines:
            for spec in m["_aws"]["CloudWatchMetrics"]:
                assert spec["Namespace"] == "netops" and m["Function"] == "fleet"
                assert all(isinstance(m[metric["Name"]], (int, float)) for metric in spec["Metrics"])
            assert m["request_id"] == "cold-start-1" and m["Latency"] >= 0


def test_the_fleet_function_sends_compressed_answers_as_base64_and_304s_without_body():
    """As API Gateway gets them: a compressed body is binary (`isBase64Encoded`, which API
    Gateway decodes before sending), a HEAD and a 304 carry no body and the 304 no
    `Content-Length`, and a preflight from an allowed origin needs no token."""
    import base64
    import gzip

    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "netops.db")
        subprocess.run([str(BINARY), "seed", "--db", db, "--days", "1"], check=True, capture_output=True)
        token = subprocess.run(
            [str(BINARY), "token", "create", "--tenant", "acme", "--name", "lambda", "--scopes", "read:machines", "--db", db],
            check=True, capture_output=True, text=True,
        ).stdout.strip()
        plain = apigw_event("/api/v1/machines", token, "limit=100")
        gzipped = apigw_event("/api/v1/machines", token, "limit=100")
        gzipped["headers"]["accept-encoding"] = "gzip"
        _, api = run_function(FLEET, [plain, gzipped], {"NETOPS_DB": db})
        assert not api.errors, api.errors
        text, packed = api.responses["req-0"][1], api.responses["req-1"][1]
        assert text["statusCode"] == 200 and not text.get("isBase64Encoded")
        assert packed["statusCode"] == 200 and packed["isBase64Encoded"] is True
        headers = {k.lower(): v for k, v in packed["headers"].items()}
        assert headers["content-encoding"] == "gzip" and "accept-encoding" in headers["vary"].lower()
        assert gzip.decompress(base64.b64decode(packed["body"])) == text["body"].encode()
        tag = headers["etag"]
        assert tag.endswith('-gzip"')

        conditional = apigw_event("/api/v1/machines", token, "limit=100")
        conditional["headers"]["if-none-match"] = tag
        head = apigw_event("/api/v1/machines", token, "limit=100")
        head["requestContext"]["http"]["method"] = "HEAD"
        preflight = apigw_event("/api/v1/machines", "")
        del preflight["headers"]["authorization"]
        preflight["requestContext"]["http"]["method"] = "OPTIONS"
        preflight["headers"].update({"origin": "https://dashboard.example.com", "access-control-request-method": "GET"})
        _, api = run_function(FLEET, [conditional, head, preflight],
                              {"NETOPS_DB": db, "NETOPS_CORS_ORIGINS": "https://dashboard.example.com"})
        assert not api.errors, api.errors
        not_modified, headed, pre = (api.responses[f"req-{i}"][1] for i in range(3))
        assert not_modified["statusCode"] == 304 and not not_modified.get("body")
        nm = {k.lower(): v for k, v in not_modified["headers"].items()}
        assert "content-length" not in nm and nm["etag"] == tag.removesuffix('-gzip"') + '"'
        assert headed["statusCode"] == 200 and not headed.get("body")
        assert {k.lower(): v for k, v in headed["headers"].items()}["content-length"] == str(len(text["body"].encode()))
        assert pre["statusCode"] == 200
        assert {k.lower(): v for k, v in pre["headers"].items()}["access-control-allow-origin"] == "https://dashboard.example.com"


def test_the_metrics_line_counts_what_each_request_cost_dynamodb():
    env, token = dynamodb_env_and_token("emf", "emf")
    events = [apigw_event("/api/v1/me", token), apigw_event("/api/v1/me", "nop_" + "x" * 40)]
    _, api = run_function(FLEET, events, {k: env[k] for k in env if k.startswith("NETOPS_")})
    assert not api.errors, api.errors
    assert api.responses["req-0"][1]["statusCode"] == 200
    lines = [json.loads(line) for line in api.stdout.splitlines() if line.startswith("{")]
    assert [m["status"] for m in lines] == [200, 401]
    ok, refused = lines
    # Who called is in the line as properties (for per-tenant usage in Logs Insights), never
    # as a dimension; an unknown token has none.
    assert (ok["tenant"], ok["token"]) == ("acme", "emf"), ok
    assert (refused["tenant"], refused["token"]) == (None, None), refused
    names = {m["Name"] for m in ok["_aws"]["CloudWatchMetrics"][0]["Metrics"]}
    assert {"DynamoCalls", "ReadUnits", "WriteUnits"} <= names
    # A known token: its lookup (a read) and the count of the call (a write), at least.
    assert ok["DynamoCalls"] >= 2, ok
    assert ok["ReadUnits"] > 0 and ok["WriteUnits"] > 0, ok
    # An unknown token is looked up, and its refusal logged: it costs its own calls, and
    # none of the first request's.
    assert 1 <= refused["DynamoCalls"] < ok["DynamoCalls"] + 3, refused


# One route of every function (method, path, JSON body), called through the watch router.
ONE_ROUTE = {
    "fleet": ("GET", "/api/v1/me", None),
    "flows": ("GET", "/api/v1/flows/summary", None),
    "netdiag": ("GET", "/api/v1/netdiag/machines?limit=1", None),
    "alerts": ("GET", "/api/v1/alerts?limit=1", None),
    "inventory": ("GET", "/api/v1/inventory/assets?limit=1", None),
    "operations": ("GET", "/api/v1/heartbeats?limit=1", None),
    "security": ("GET", "/api/v1/security/rules", None),
    "databases": ("GET", "/api/v1/databases/instances", None),
    "firewall": ("GET", "/api/v1/firewall/devices", None),
    "dns": ("GET", "/api/v1/dns/top-domains?limit=1", None),
    "files": ("GET", "/api/v1/files/summary", None),
    "network": ("GET", "/api/v1/network/sites", None),
    "mcp": ("POST", "/api/v1/mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
    "docs": ("GET", "/api/v1/openapi.json", None),
}


def require_cargo_lambda():
    if cargo_lambda() is None:
        if os.environ.get("NETOPS_REQUIRE_LAMBDA_TOOLS"):
            pytest.fail("cargo-lambda is required (pip install cargo-lambda)")
        pytest.skip("cargo-lambda is not installed")


def seeded_db(tmp):
    db = os.path.join(tmp, "netops.db")
    subprocess.run([str(BINARY), "seed", "--db", db, "--days", "1"], check=True, capture_output=True)
    token = subprocess.run(
        [str(BINARY), "token", "create", "--tenant", "acme", "--name", "watch", "--scopes", "all", "--db", db],
        check=True, capture_output=True, text=True,
    ).stdout.strip()
    return db, token


def repo_state():
    """What `git status` says of the repository (None outside a git checkout)."""
    out = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=ROOT, capture_output=True, text=True)
    return out.stdout if out.returncode == 0 else None


def test_cargo_lambda_watch_serves_every_function_and_invoke_answers_an_event():
    require_cargo_lambda()
    before = repo_state()
    with tempfile.TemporaryDirectory() as tmp:
        db, token = seeded_db(tmp)
        watch = Watch(ROOT, {"NETOPS_DB": db})
        try:
            watch.wait_listening()
            for function, (method, path, body) in ONE_ROUTE.items():
                # A function's first request starts it (`cargo run`): on a busy machine that
                # can take longer than the router's 10 s, and the request gets a 408 meanwhile.
                deadline = time.time() + 180
                res = watch.request(method, path, token, body)
                while res.status_code == 408 and time.time() < deadline:
                    res = watch.request(method, path, token, body)
                assert res.status_code == 200, f"{function}: {res.status_code} {res.text[:300]}\n{watch.output()[-3000:]}"
                assert res.headers["content-type"].startswith("application/json"), function
                assert res.json(), function
            # Unknown paths reach docs through the router's catch-all: the API's JSON 404.
            missing = watch.request("GET", "/api/v1/nowhere", token)
            assert missing.status_code == 404 and missing.json()["error"] == "not_found"

            # cargo lambda invoke, with an events/ payload carrying a real token.
            event = json.loads((ROOT / "events" / "fleet" / "get_me.json").read_text())
            event["headers"]["authorization"] = f"Bearer {token}"
            data = os.path.join(tmp, "get_me.json")
            with open(data, "w") as f:
                json.dump(event, f)
            def invoke():
                return subprocess.run(
                    ["cargo", "lambda", "invoke", "fleet", "--data-file", data, "--invoke-port", str(watch.port),
                     "--invoke-address", "127.0.0.1", "--output-format", "json"],
                    cwd=ROOT, capture_output=True, text=True, timeout=120,
                )
            out = invoke()
            if out.returncode != 0 and "invalid error payload" in out.stderr:
                # Once seen on a loaded machine: the emulator's 10 s timeout passed before the
                # function answered (an empty error payload). Asked again; a second failure fails.
                print("first invoke failed:", out.stderr, watch.output()[-3000:])
                out = invoke()
            assert out.returncode == 0, f"{out.stderr}\n{watch.output()[-3000:]}"
            answer = json.loads(out.stdout)
            assert answer["statusCode"] == 200, answer
            assert json.loads(answer["body"])["data"]["tenant"] == "acme"
            assert {k.lower(): v for k, v in answer["headers"].items()}["x-request-id"] == event["requestContext"]["requestId"]

            # A function that crashed: its requests end in an error once the router's timeout
            # has passed, never in a hang.
            fleet = [pid for pid, cmd in watch.descendants() if cmd.split()[0].endswith("/fleet")]
            assert len(fleet) == 1, watch.descendants()
            os.kill(fleet[0], signal.SIGKILL)
            started = time.time()
            res = watch.request("GET", "/api/v1/me", token, timeout=60)
            assert res.status_code == 408 and time.time() - started < 15, (res.status_code, time.time() - started)

            took = watch.stop()
            assert took < 10, f"Ctrl-C took {took:.1f} s"
            assert watch.proc.returncode is not None
            assert not watch.survivors, f"still running after Ctrl-C: {watch.survivors}"
        finally:
            watch.close()
    assert repo_state() == before, "the watch session changed the repository"


def test_a_function_that_cannot_start_answers_an_error_within_seconds():
    require_cargo_lambda()
    # Every function refuses this configuration at start and exits: requests must not hang.
    watch = Watch(ROOT, {"NETOPS_STORE": "nowhere"})
    try:
        watch.wait_listening()
        started = time.time()
        res = watch.request("GET", "/api/v1/me", "nop_" + "x" * 40, timeout=60)
        took = time.time() - started
        # cargo lambda answers 408 once the router's timeout (10 s, Cargo.toml) has passed.
        assert res.status_code == 408, res.status_code
        assert took < 15, f"answered after {took:.1f} s"
        assert "command exited" in watch.output() or "exited" in watch.output(), watch.output()[-2000:]
    finally:
        watch.close()


def scratch_copy(dest):
    """The repository's files (tracked and new, not ignored) copied to `dest`."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            cwd=ROOT, capture_output=True, text=True)
    if listed.returncode == 0:
        for name in filter(None, listed.stdout.split("\0")):
            if (ROOT / name).is_file():
                os.makedirs(os.path.dirname(os.path.join(dest, name)), exist_ok=True)
                shutil.copy2(ROOT / name, os.path.join(dest, name))
    else:
        shutil.copytree(ROOT, dest, dirs_exist_ok=True, ignore=shutil.ignore_patterns(
            "target", ".git", ".venv*", "artifacts", "node_modules", ".aws-sam", "*.db"))


def wait_for(check, timeout, what):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if check():
            return
        time.sleep(1)
    raise TimeoutError(what)


def test_cargo_lambda_watch_serves_an_edited_handler_after_the_rebuild():
    require_cargo_lambda()
    with tempfile.TemporaryDirectory() as tmp:
        scratch = os.path.join(tmp, "repo")
        scratch_copy(scratch)
        db, token = seeded_db(tmp)
        # Its own target directory: the repository's builds stay untouched.
        watch = Watch(scratch, {"NETOPS_DB": db, "CARGO_TARGET_DIR": os.path.join(tmp, "target")})
        try:
            watch.wait_listening()
            def name():
                res = watch.request("GET", "/api/v1/me", token, timeout=60)
                return res.json()["data"]["name"] if res.status_code == 200 else None

            # The first request starts the function's first build (408s until it is done).
            wait_for(lambda: name() == "watch", 1200, f"fleet never answered:\n{watch.output()[-3000:]}")

            handlers = pathlib.Path(scratch, "functions", "fleet", "src", "handlers.rs")
            code, edits = re.subn(r"name: caller\.token_name,", 'name: format!("{}-edited", caller.token_name),',
                                  handlers.read_text())
            assert edits == 1, "get_me's answer is not where this test edits it"
            handlers.write_text(code)
            wait_for(lambda: name() == "watch-edited", 600, f"no new answer after the edit:\n{watch.output()[-3000:]}")
        finally:
            watch.close()


def test_the_pass_function_counts_the_tenants_whose_collected_data_stopped_arriving(server, tmp_path):
    """The scheduled pass's binary under the Runtime API, invoked with EventBridge's event: its
    EMF line counts the stale tenants by function only and names them apart; two hours later
    (faketime) a tenant that collected now is stale."""
    collect = server.create_token("collect:dns", "pass-relay")
    machine = server.get("/machines?limit=1").json()["data"][0]["hostname"]
    line = {"at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "machine": machine,
            "domain": "pass-test.example", "query_type": "A", "response_code": "NOERROR",
            "resolver": "10.10.0.53", "latency_ms": 2.0}
    res = requests.post(
        server.base_url + "/collect/dns-resolution", data=json.dumps(line),
        headers={"Authorization": f"Bearer {collect}", "Content-Type": "application/x-ndjson"}, timeout=30)
    assert res.status_code == 200, res.text

    def run_pass(prefix=(), db=server.db):
        _, api = run_function(PASS, [SCHEDULED_EVENT], {"NETOPS_DB": db, "AWS_LAMBDA_FUNCTION_NAME": "netops-pass"},
                              prefix=prefix)
        assert not api.errors, api.errors
        lines = [json.loads(line) for line in api.stdout.splitlines() if line.startswith("{")]
        assert len(lines) == 1, api.stdout
        assert api.responses["req-0"][1]["stale"] == lines[0]["stale_tenants"]
        return lines[0]

    now = run_pass()
    assert now["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [["Function"]]
    assert now["Function"] == "netops-pass" and now["Tenants"] >= 1 and now["PassFailures"] == 0
    assert "acme" not in now["stale_tenants"]
    # Two hours on, over a copy of the store: the pass also marks the machines silent since
    # offline, which the session's server must not see.
    copy = str(tmp_path / "later.db")
    with sqlite3.connect(server.db) as src, sqlite3.connect(copy) as dst:
        src.backup(dst)
    later = run_pass(prefix=("faketime", "-f", "+2h"), db=copy)
    assert "acme" in later["stale_tenants"] and later["StaleTenants"] == len(later["stale_tenants"])
    # No heartbeat for two hours: every online machine of the demo goes offline.
    assert later["tasks"]["machines_offline"] > 0, later
