"""The fleet function binary under the Lambda Runtime API protocol, as on AWS: it polls for
an API Gateway event, runs it through its router and posts the HTTP answer back."""

import json
import os
import pathlib
import subprocess
import tempfile

from conftest import BINARY, ROOT
from lambda_runtime import apigw_event, run_function

FLEET = pathlib.Path(os.environ.get("NETOPS_FLEET_BIN", ROOT / "target" / "debug" / "fleet"))


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
