"""The cursor key ring on AWS, through the real fleet binary under the Lambda Runtime API: the
function reads the ring from Secrets Manager (a DynamoDB-and-Secrets-Manager-protocol server,
moto) at start and again after its refresh interval (1 s here instead of 300), and the
rotation infra/README.md documents breaks no cursor still valid."""

import base64
import hashlib
import hmac
import json
import os
import subprocess
import tempfile
import time

from conftest import BINARY, aws_endpoint
from lambda_runtime import Started, apigw_event
from test_lambda_runtime import FLEET, seeded_db

MAC_LEN = 16


def b64d(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def signed_by(cursor, key):
    raw = b64d(cursor)
    payload, tag = raw[:-MAC_LEN], raw[-MAC_LEN:]
    return hmac.new(key, payload, hashlib.sha256).digest()[:MAC_LEN] == tag


def resign(cursor, key, **changes):
    payload = json.loads(b64d(cursor)[:-MAC_LEN])
    payload.update(changes)
    data = json.dumps(payload, separators=(",", ":")).encode()
    data += hmac.new(key, data, hashlib.sha256).digest()[:MAC_LEN]
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def test_a_rotation_of_the_cursor_key_breaks_no_cursor_still_valid():
    endpoint = aws_endpoint()
    import boto3

    sm = boto3.client("secretsmanager", endpoint_url=endpoint, region_name="us-east-1",
                      aws_access_key_id="testing", aws_secret_access_key="testing")
    one, two = b"first-cursor-key", b"second-cursor-key"
    secret = sm.create_secret(Name=f"netops-cursor-{os.getpid()}-{time.time_ns()}", SecretString=one.decode())
    with tempfile.TemporaryDirectory() as tmp:
        db, token = seeded_db(tmp)
        fleet = Started(FLEET, {
            "NETOPS_STORE": "embedded", "NETOPS_DB": db,
            "NETOPS_CURSOR_SECRET_ARN": secret["ARN"], "NETOPS_SECRETS_ENDPOINT": endpoint,
            "NETOPS_CURSOR_REFRESH_SECS": "1",
        })
        try:
            def page(cursor=None):
                query = "limit=2" + (f"&cursor={cursor}" if cursor else "")
                event = apigw_event("/api/v1/machines", token, query)
                event["headers"]["accept-language"] = "en"
                answer = fleet.call(event)
                return answer["statusCode"], json.loads(answer["body"])

            status, first = page()
            assert status == 200, first
            c1 = first["meta"]["next_cursor"]
            assert signed_by(c1, one)

            # 1. The new key is staged (AWSPENDING): it verifies everywhere before it signs.
            pending = sm.put_secret_value(SecretId=secret["ARN"], SecretString=two.decode(),
                                          VersionStages=["AWSPENDING"])
            time.sleep(1.2)
            status, second = page(c1)
            assert status == 200, second
            c2 = second["meta"]["next_cursor"]
            assert signed_by(c2, one), "the current key still signs"
            assert page(resign(c2, two))[0] == 200, "a cursor of the staged key is accepted"

            # 2. The new key becomes current; the old one, previous, keeps verifying.
            sm.update_secret_version_stage(SecretId=secret["ARN"], VersionStage="AWSCURRENT",
                                           MoveToVersionId=pending["VersionId"],
                                           RemoveFromVersionId=secret["VersionId"])
            time.sleep(1.2)
            status, third = page(c2)
            assert status == 200, third
            assert [m["hostname"] for m in third["data"]] != [m["hostname"] for m in second["data"]]
            c3 = third["meta"]["next_cursor"]
            assert signed_by(c3, two), "the new key signs"
            assert page(c1)[0] == 200, "a cursor of the retired key is still valid"

            # A key of no version, and a cursor older than cursors stay valid (24 hours).
            status, foreign = page(resign(c3, b"not-a-key-of-the-ring"))
            assert (status, foreign["error"]) == (400, "invalid_cursor"), foreign
            day_old = resign(c3, two, i=int(time.time()) - 24 * 3600 - 60)
            status, expired = page(day_old)
            assert (status, expired["error"]) == (400, "invalid_cursor"), expired
            assert "expired" in expired["message"].lower(), expired
        finally:
            stderr = fleet.close()
    assert "panicked" not in stderr, stderr


def test_a_ring_not_read_yet_holds_back_the_pages_alone():
    """The ring is read beside the first requests, not before them: while it cannot be read
    (here a secret that does not exist), a request without a cursor to sign or verify is
    answered, and a page waits for the ring as long as a store operation may take, then
    answers 503, the function still running."""
    endpoint = aws_endpoint()
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "netops.db")
        token = subprocess.run(
            [str(BINARY), "token", "create", "--tenant", "acme", "--name", "ring", "--scopes", "all", "--db", db],
            check=True, capture_output=True, text=True,
        ).stdout.strip()
        fleet = Started(FLEET, {
            "NETOPS_STORE": "embedded", "NETOPS_DB": db, "NETOPS_DYNAMODB_TIMEOUT_SECS": "1",
            "NETOPS_CURSOR_SECRET_ARN": f"arn:aws:secretsmanager:us-east-1:123456789012:secret:none-{time.time_ns()}",
            "NETOPS_SECRETS_ENDPOINT": endpoint,
        })
        try:
            assert fleet.call(apigw_event("/api/v1/me", token))["statusCode"] == 200
            started = time.perf_counter()
            answer = fleet.call(apigw_event("/api/v1/machines", token, "limit=2"))
            waited = time.perf_counter() - started
            assert answer["statusCode"] == 503, answer
            assert json.loads(answer["body"])["error"] == "service_unavailable", answer
            assert 1 <= waited < 5, waited
            assert fleet.call(apigw_event("/api/v1/me", token))["statusCode"] == 200
        finally:
            stderr = fleet.close()
    assert "cursor key ring not read" in stderr, stderr
