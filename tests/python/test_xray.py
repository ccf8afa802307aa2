"""Active tracing through the real fleet binary under the Lambda Runtime API, over DynamoDB
(moto): each DynamoDB call of a sampled invocation reaches the X-Ray daemon's UDP address as a
subsegment of the function's segment; an invocation not sampled sends nothing."""

import json
import socket

from conftest import dynamodb_env_and_token
from lambda_runtime import Started, apigw_event
from test_lambda_runtime import FLEET

ROOT_ID = "1-6745a1b2-0123456789abcdef01234567"
PARENT = "53995c3f42cd8ad8"


def received(sock):
    docs = []
    while True:
        try:
            data, _ = sock.recvfrom(65536)
        except BlockingIOError:
            return docs
        header, _, body = data.decode().partition("\n")
        assert json.loads(header) == {"format": "json", "version": 1}
        docs.append(json.loads(body))


def test_sampled_invocations_send_their_dynamodb_calls_as_subsegments():
    env, token = dynamodb_env_and_token("xray", "xray")
    daemon = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    daemon.bind(("127.0.0.1", 0))
    daemon.setblocking(False)
    address = f"127.0.0.1:{daemon.getsockname()[1]}"
    fleet = Started(FLEET, {**{k: env[k] for k in env if k.startswith("NETOPS_")},
                            "AWS_XRAY_DAEMON_ADDRESS": f"udp:{address} tcp:{address}"})
    try:
        fleet.api.trace_header = f"Root={ROOT_ID};Parent={PARENT};Sampled=1"
        assert fleet.call(apigw_event("/api/v1/me", token))["statusCode"] == 200
        docs = received(daemon)
        # The token read and the rate-limit count, at least.
        operations = [d["aws"]["operation"] for d in docs]
        assert {"GetItem", "UpdateItem"} <= set(operations), docs
        for d in docs:
            assert (d["trace_id"], d["parent_id"], d["type"]) == (ROOT_ID, PARENT, "subsegment"), d
            assert d["name"] == "DynamoDB" and d["namespace"] == "aws", d
            assert len(d["id"]) == 16 and d["start_time"] <= d["end_time"], d
            assert d["http"]["response"]["status"] == 200 and not d["fault"], d
        assert len({d["id"] for d in docs}) == len(docs)

        fleet.api.trace_header = f"Root={ROOT_ID};Parent={PARENT};Sampled=0"
        assert fleet.call(apigw_event("/api/v1/me", token))["statusCode"] == 200
        assert received(daemon) == []
    finally:
        stderr = fleet.close()
        daemon.close()
    assert "panicked" not in stderr, stderr
