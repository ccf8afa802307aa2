"""NETOPS_EXTRA_CA_FILE (docs/configuration.md): the AWS clients of a function (the Lambda
branch, Amazon's roots) and of the CLI (the system's roots) trust the certificates of that
file besides, here a local CA whose certificate moto serves HTTPS with; without the setting
they trust none of it, and a file that is missing or not a certificate stops the start,
naming the variable."""

import os
import subprocess
import tempfile

import pytest
from conftest import BINARY
from lambda_runtime import Started, apigw_event
from local_tls import make_certificates, start_moto, stop
from test_lambda_runtime import FLEET


@pytest.fixture(scope="module")
def tls_moto():
    with tempfile.TemporaryDirectory() as tmp, tempfile.TemporaryFile() as log:
        certificates = make_certificates(tmp)
        procs, endpoint = start_moto(log, certificates)
        try:
            yield endpoint, certificates["ca"]
        finally:
            stop(procs)


def store_env(endpoint, **extra):
    env = {"NETOPS_STORE": "dynamodb", "NETOPS_DYNAMODB_ENDPOINT": endpoint,
           "NETOPS_DYNAMODB_TABLE_PREFIX": f"ca{os.getpid()}-", "NETOPS_DYNAMODB_TIMEOUT_SECS": "4",
           "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_REGION": "us-east-1",
           "AWS_EC2_METADATA_DISABLED": "true"}
    env.update(extra)
    return env


def cli_token(env, name):
    return subprocess.run(
        [str(BINARY), "token", "create", "--tenant", "acme", "--name", name, "--scopes", "all"],
        check=False, capture_output=True, text=True, env=dict(os.environ, **env),
    )


def test_the_functions_and_the_cli_trust_an_extra_ca_over_https_and_only_with_it(tls_moto):
    endpoint, ca = tls_moto
    trusting = store_env(endpoint, NETOPS_EXTRA_CA_FILE=ca)
    # The CLI (the system's roots and the file): the tables are made and the token stored.
    made = cli_token(trusting, "tls")
    assert made.returncode == 0, made.stderr
    token = made.stdout.strip()
    # Without the file the CLI trusts no certificate of moto's.
    refused = cli_token(store_env(endpoint), "tls-untrusted")
    assert refused.returncode != 0 and "tls-untrusted" not in refused.stdout, refused

    import boto3

    sm = boto3.client("secretsmanager", endpoint_url=endpoint, region_name="us-east-1", verify=ca,
                      aws_access_key_id="testing", aws_secret_access_key="testing")
    secret = sm.create_secret(Name=f"tls-cursor-{os.getpid()}", SecretString="tls-cursor-key")
    # A function (Amazon's roots and the file) reads its cursor key ring from Secrets Manager
    # at start and the token from DynamoDB, both over HTTPS.
    fleet = Started(FLEET, dict(trusting, NETOPS_CURSOR_SECRET_ARN=secret["ARN"], NETOPS_SECRETS_ENDPOINT=endpoint))
    try:
        answer = fleet.call(apigw_event("/api/v1/me", token))
        assert answer["statusCode"] == 200, answer
    finally:
        fleet.close()
    # Without it, the same function cannot reach DynamoDB: the token cannot be checked.
    fleet = Started(FLEET, store_env(endpoint, NETOPS_CURSOR_SECRET="k"))
    try:
        answer = fleet.call(apigw_event("/api/v1/me", token))
        assert answer["statusCode"] == 503, answer
    finally:
        fleet.close()


@pytest.mark.parametrize("content", [None, b"", b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"],
                         ids=["missing", "empty", "not-a-certificate"])
def test_a_missing_or_bad_extra_ca_file_stops_the_start_naming_the_variable(tls_moto, content, tmp_path):
    endpoint, _ = tls_moto
    path = tmp_path / "ca.pem"
    if content is not None:
        path.write_bytes(content)
    env = store_env(endpoint, NETOPS_EXTRA_CA_FILE=str(path), NETOPS_CURSOR_SECRET="k")
    made = cli_token(env, "bad-ca")
    assert made.returncode != 0 and f"NETOPS_EXTRA_CA_FILE={path}" in made.stderr, made
    fleet = Started(FLEET, env)
    try:
        with pytest.raises(AssertionError, match="the function failed"):
            fleet.call(apigw_event("/api/v1/me", "nop_" + "x" * 40))
    finally:
        stderr = fleet.close()
    assert f"NETOPS_EXTRA_CA_FILE={path}" in stderr, stderr
