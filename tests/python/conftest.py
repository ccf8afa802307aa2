"""Fixtures for the Python tests: the real `netops serve` on a free port, over a fresh store."""

import os
import pathlib
import re
import shutil
import subprocess
import tempfile
import threading
import time
from contextlib import contextmanager

import pytest
import requests

ROOT = pathlib.Path(__file__).resolve().parents[2]
BINARY = pathlib.Path(os.environ.get("NETOPS_BIN", ROOT / "target" / "debug" / "netops"))


def aws_endpoint():
    """The AWS-protocol server of the test command (moto: DynamoDB and Secrets Manager); the
    test is skipped without one, and fails when the run requires it."""
    endpoint = os.environ.get("NETOPS_TEST_DYNAMODB_ENDPOINT")
    if not endpoint:
        if os.environ.get("NETOPS_REQUIRE_AWS_TESTS"):
            pytest.fail("NETOPS_TEST_DYNAMODB_ENDPOINT is required")
        pytest.skip("no AWS-protocol server (NETOPS_TEST_DYNAMODB_ENDPOINT)")
    return endpoint


def dynamodb_env_and_token(prefix, name):
    """A DynamoDB store on that server with tables of its own (`prefix`), and a token of tenant
    acme made there as an operator makes one (the CLI creates the tables when missing)."""
    env = dict(os.environ, NETOPS_STORE="dynamodb", NETOPS_DYNAMODB_ENDPOINT=aws_endpoint(),
               NETOPS_DYNAMODB_TABLE_PREFIX=f"{prefix}{os.getpid()}-")
    token = subprocess.run(
        [str(BINARY), "token", "create", "--tenant", "acme", "--name", name, "--scopes", "all"],
        check=True, capture_output=True, text=True, env=env,
    ).stdout.strip()
    return env, token


class Server:
    def __init__(self, base_url: str, token: str, db: str):
        self.base_url = base_url
        self.token = token
        self.db = db

    def headers(self, token=None):
        return {"Authorization": f"Bearer {token or self.token}"}

    def get(self, path, token=None, **kw):
        return requests.get(self.base_url + path, headers=self.headers(token), timeout=30, **kw)

    def create_token(self, scopes: str, name: str, tenant: str = "acme") -> str:
        out = subprocess.run(
            [str(BINARY), "token", "create", "--tenant", tenant, "--name", name, "--scopes", scopes, "--db", self.db],
            check=True, capture_output=True, text=True,
        )
        return out.stdout.strip()


@contextmanager
def served(env_extra=None, addr="127.0.0.1:0"):
    """`netops serve` over a fresh store in a directory of its own, both gone afterwards (a
    seeded file weighs about 160 MB); on a free port unless `addr` names one."""
    workdir = tempfile.mkdtemp(prefix="netops-py-")
    db = os.path.join(workdir, "netops.db")
    env = dict(os.environ, RUST_LOG="warn", **(env_extra or {}))
    proc = subprocess.Popen(
        [str(BINARY), "serve", "--addr", addr, "--db", db],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env,
    )
    try:
        base, token = None, None
        deadline = time.time() + 120
        while time.time() < deadline and (base is None or token is None):
            line = proc.stdout.readline()
            if not line:
                break
            if m := re.match(r"base URL: (\S+)", line):
                base = m.group(1)
            if m := re.match(r"token: (\S+)", line):
                token = m.group(1)
        if base is None or token is None:
            raise RuntimeError("netops serve did not start")
        # Keep draining what the server prints.
        threading.Thread(target=lambda: [None for _ in proc.stdout], daemon=True).start()
        yield Server(base, token, db)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture(scope="session")
def server():
    """The server as shipped (600 calls per minute and per token), its simulated agents
    syncing every 5 s and taking 2 s to run an action rather than 30 s and 1 to 3 minutes."""
    with served({"NETOPS_AGENT_POLL_SECONDS": "5", "NETOPS_AGENT_ACTION_DELAY_SECONDS": "2"}) as srv:
        yield srv


@pytest.fixture(scope="session")
def unlimited_server():
    """A server whose rate limit does not cut a long generated test run."""
    with served({"NETOPS_RATE_LIMIT": "100000000"}) as srv:
        yield srv
