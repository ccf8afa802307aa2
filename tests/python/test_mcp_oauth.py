"""The MCP endpoint as an OAuth 2.1 resource server (docs/mcp.md#oauth), end to end: a real
authorization server on loopback (oidc-provider, tests/node/oauth-issuer.mjs) and the Python MCP
SDK's OAuth client, which finds the issuer through the 401's protected resource metadata, runs
the authorization code flow with PKCE and a resource indicator, and calls tools with the JWT it
gets, against the real `netops serve` configured with that issuer."""

import base64
import hashlib
import hmac
import json
import os
import re
import signal
import socket
import subprocess
import tempfile
import time
import urllib.parse
from contextlib import contextmanager

import anyio
import jwt
import pytest
import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from mcp import Client
from mcp.client.auth import OAuthClientProvider, TokenStorage
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata

from conftest import served

ISSUER_SCRIPT = os.path.join(os.path.dirname(__file__), "..", "node", "oauth-issuer.mjs")
# The client registered beforehand at the issuer (as with Amazon Cognito, which has no dynamic
# registration), and its loopback redirect URI, which no one listens on: the test reads the
# code from the issuer's last redirect, as a native app's loopback listener would.
CLIENT_ID = "netops-tests"
REDIRECT_URI = "http://127.0.0.1/callback"


# The least time between two fetches of the issuer's keys, shortened from its 30 s so the
# rotation and recovery cases wait a second, not half a minute.
REFETCH_SECS = 1


class Issuer:
    """The authorization server process: its URL, and its signing key (JWK) as of now."""

    def __init__(self, proc, url, key_file):
        self.proc, self.url, self.key_file = proc, url, key_file

    def key(self):
        with open(self.key_file) as f:
            return json.load(f)

    def rotate(self):
        """A new key signs from now on (published beside the old ones); returns it."""
        self.proc.send_signal(signal.SIGHUP)
        line = line_starting(self.proc, "rotated ")
        key = self.key()
        assert line == f"rotated {key['kid']}"
        return key


def line_starting(proc, prefix):
    """The next line of `proc` that starts with `prefix` (oidc-provider prints notices too)."""
    for _ in range(50):
        line = proc.stdout.readline()
        if not line or line.startswith(prefix):
            return line.strip()
    raise AssertionError(f"no line starting with {prefix!r}")


@contextmanager
def running_issuer(port):
    keydir = tempfile.mkdtemp(prefix="netops-issuer-")
    key_file = os.path.join(keydir, "key.json")
    proc = subprocess.Popen(
        ["node", ISSUER_SCRIPT, REDIRECT_URI],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        env=dict(os.environ, ISSUER_KEY_FILE=key_file, ISSUER_PORT=str(port)),
    )
    try:
        url = line_starting(proc, "http://")
        assert url == f"http://127.0.0.1:{port}", f"the issuer did not start: {url!r}"
        yield Issuer(proc, url, key_file)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        os.remove(key_file)
        os.rmdir(keydir)


@pytest.fixture(scope="module")
def issuer_port():
    """The issuer's port, chosen before the server starts: the issuer itself is started by the
    first test that needs it, so the first test of this file sees it out of reach."""
    return free_port()


@pytest.fixture(scope="module")
def issuer_process(issuer_port):
    with running_issuer(issuer_port) as issuer:
        yield issuer


@pytest.fixture(scope="module")
def issuer(issuer_process):
    """The authorization server's issuer URL and its first private signing key (JWK)."""
    return issuer_process.url, issuer_process.key()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def oauth_server(issuer_port):
    """`netops serve` accepting the issuer's tokens for its MCP endpoint, whose URL (the
    tokens' audience) is known before it starts: a port is picked first."""
    port = free_port()
    resource = f"http://127.0.0.1:{port}/api/v1/mcp"
    env = {"NETOPS_OAUTH_ISSUER": f"http://127.0.0.1:{issuer_port}", "NETOPS_OAUTH_RESOURCE": resource,
           "NETOPS_OAUTH_JWKS_REFETCH_SECS": str(REFETCH_SECS)}
    with served(env, addr=f"127.0.0.1:{port}") as srv:
        yield srv


def follow_login(authorization_url, account):
    """What the person at the browser does: opens the authorization URL and is sent back to
    the client's redirect URI (the issuer's interaction logs `account` in and consents). Returns
    the redirect's query parameters."""
    browser = requests.Session()
    url = authorization_url + "&" + urllib.parse.urlencode({"login_hint": account})
    for _ in range(10):
        res = browser.get(url, allow_redirects=False, timeout=10)
        assert res.status_code in (302, 303), (res.status_code, res.text[:300])
        url = urllib.parse.urljoin(url, res.headers["Location"])
        if url.startswith(REDIRECT_URI):
            query = urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)
            return {k: v[0] for k, v in query.items()}
    raise AssertionError("the authorization server never sent the browser back")


class Memory(TokenStorage):
    """Token storage of one client run, holding the pre-registered client."""

    def __init__(self):
        self.tokens = None
        self.client = OAuthClientInformationFull(
            client_id=CLIENT_ID, redirect_uris=[REDIRECT_URI], token_endpoint_auth_method="none",
            grant_types=["authorization_code", "refresh_token"],
        )

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens

    async def get_client_info(self):
        return self.client

    async def set_client_info(self, client_info):
        self.client = client_info


def with_sdk_oauth(server, account, body):
    """Connects the SDK client with its OAuth provider, logging in as `account` when the
    server asks; returns `body(client)` and the access token the flow obtained."""
    storage = Memory()
    redirect = {}

    async def redirect_handler(url):
        redirect.update(await anyio.to_thread.run_sync(follow_login, url, account))

    async def callback_handler():
        return AuthorizationCodeResult(code=redirect["code"], state=redirect.get("state"),
                                       iss=redirect.get("iss"))

    auth = OAuthClientProvider(
        server_url=server.base_url + "/mcp",
        client_metadata=OAuthClientMetadata(redirect_uris=[REDIRECT_URI], client_name="netops tests",
                                            token_endpoint_auth_method="none"),
        storage=storage, redirect_handler=redirect_handler, callback_handler=callback_handler,
    )

    async def main():
        http = create_mcp_http_client(auth=auth)
        async with http, Client(streamable_http_client(server.base_url + "/mcp", http_client=http)) as client:
            return await body(client)

    result = anyio.run(main)
    assert redirect, "the SDK never went through the authorization server"
    return result, storage.tokens.access_token


def rest_body(result):
    assert not result.is_error, result.content
    return json.loads(result.content[0].text)


async def me_and_machines(client):
    tools = (await client.list_tools()).tools
    me = rest_body(await client.call_tool("get_me", {}))
    machines = rest_body(await client.call_tool("list_machines", {"limit": 100}))
    return [t.name for t in tools], me["data"], {m["hostname"] for m in machines["data"]}


def mcp_post(server, token=None):
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
               "MCP-Protocol-Version": "2025-11-25"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    return requests.post(server.base_url + "/mcp", json=body, headers=headers, timeout=30)


def challenge(res):
    """The parameters of a `WWW-Authenticate: Bearer ...` header."""
    value = res.headers.get("WWW-Authenticate", "")
    assert value.startswith("Bearer"), value
    return dict(re.findall(r'(\w+)="([^"]*)"', value))


def signed(key, claims, kid):
    """A JWT with `claims`, signed ES256 by `key` (a private JWK or a key object)."""
    if isinstance(key, dict):
        key = jwt.PyJWK(key).key
    return jwt.encode(claims, key, algorithm="ES256", headers={"kid": kid, "typ": "at+jwt"})


def hmac_signed(claims, key):
    """The algorithm confusion attack: HS256 keyed with the issuer's public key (its PEM), by
    hand, since PyJWT refuses to write it."""
    public = jwt.PyJWK({k: key[k] for k in ("kty", "crv", "x", "y")}).key
    pem = public.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    b64 = lambda b: base64.urlsafe_b64encode(b).rstrip(b"=")
    head = b64(json.dumps({"alg": "HS256", "typ": "JWT", "kid": key["kid"]}).encode())
    signing_input = head + b"." + b64(json.dumps(claims).encode())
    return (signing_input + b"." + b64(hmac.new(pem, signing_input, hashlib.sha256).digest())).decode()


def claims(issuer_url, audience, tenant="acme", **over):
    now = int(time.time())
    base = {"iss": issuer_url, "aud": audience, "sub": "alice", "tenant": tenant,
            "scope": "read:machines", "iat": now, "exp": now + 300, "client_id": CLIENT_ID}
    return {**base, **over}


def test_an_issuer_out_of_reach_is_503_and_the_endpoint_recovers_when_it_is_back(
        oauth_server, issuer_port, request):
    """First of the file: the server has never reached the issuer, which is not started yet."""
    issuer_url = f"http://127.0.0.1:{issuer_port}"
    resource = oauth_server.base_url + "/mcp"
    stranger = ec.generate_private_key(ec.SECP256R1())
    # Nothing listens on the issuer's port: no key was ever fetched.
    res = mcp_post(oauth_server, signed(stranger, claims(issuer_url, resource), "issuer-key-1"))
    assert res.status_code == 503, res.text
    body = res.json()
    assert body["error"] == "service_unavailable" and body["message"], body
    assert "127.0.0.1" not in res.text, "no internal detail in the body"
    # The static tokens are not held up by the issuer.
    assert oauth_server.get("/me").status_code == 200
    asked = time.monotonic()
    # The issuer comes up (the one the other tests use, on that port).
    key = request.getfixturevalue("issuer_process").key()
    token = signed(key, claims(issuer_url, resource), key["kid"])
    time.sleep(max(0.0, REFETCH_SECS + 0.2 - (time.monotonic() - asked)))
    res = mcp_post(oauth_server, token)
    assert res.status_code == 200, res.text
    # A token its keys refuse is 401 now, not 503.
    res = mcp_post(oauth_server, signed(stranger, claims(issuer_url, resource), key["kid"]))
    assert res.status_code == 401


def test_the_401_names_the_protected_resource_metadata(oauth_server, issuer):
    res = mcp_post(oauth_server)
    assert res.status_code == 401
    params = challenge(res)
    resource = oauth_server.base_url + "/mcp"
    origin = oauth_server.base_url.removesuffix("/api/v1")
    assert params["resource_metadata"] == f"{origin}/.well-known/oauth-protected-resource/api/v1/mcp"
    assert "error" not in params, "no token sent: no error code (RFC 6750 §3.1)"
    assert "read:machines" in params["scope"].split()
    for url in (params["resource_metadata"], f"{origin}/.well-known/oauth-protected-resource"):
        meta = requests.get(url, timeout=10)
        assert meta.status_code == 200, url
        doc = meta.json()
        assert doc["resource"] == resource
        assert doc["authorization_servers"] == [issuer[0]]
        assert "read:flows" in doc["scopes_supported"]
        assert doc["bearer_methods_supported"] == ["header"]


def test_the_sdk_logs_in_and_calls_tools_of_its_own_tenant_only(oauth_server, issuer):
    (tools, me, acme_hosts), alice_token = with_sdk_oauth(oauth_server, "alice", me_and_machines)
    assert "list_machines" in tools and "get_flow_summary" in tools
    assert me["tenant"] == "acme" and me["name"] == "oauth:alice"
    assert acme_hosts
    (_, me_b, globex_hosts), bob_token = with_sdk_oauth(oauth_server, "bob", me_and_machines)
    assert me_b["tenant"] == "globex" and me_b["name"] == "oauth:bob"
    assert globex_hosts and not acme_hosts & globex_hosts, "a token of one tenant read another's"
    # The same check against the demo token of acme through REST: what alice saw is acme's.
    rest = oauth_server.get("/machines?limit=100").json()
    assert {m["hostname"] for m in rest["data"]} == acme_hosts
    # Each subject counts against a quota of its own: bob's calls leave alice's untouched.
    left = lambda token: int(mcp_post(oauth_server, token).headers["X-RateLimit-Remaining"])
    first = left(alice_token)
    left(bob_token), left(bob_token)
    assert left(alice_token) == first - 1
    # REST routes take no OAuth token: 401, as for any unknown token, without OAuth metadata.
    for path in ("/me", "/machines"):
        res = oauth_server.get(path, token=alice_token)
        assert res.status_code == 401 and res.json()["error"] == "unauthorized"
        assert res.headers["WWW-Authenticate"] == "Bearer"
    # An acme machine read through bob's token is not found, whatever the tool.
    host = sorted(acme_hosts)[0]

    async def get_acme_machine(client):
        return await client.call_tool("get_machine", {"hostname": host})

    result, _ = with_sdk_oauth(oauth_server, "bob", get_acme_machine)
    assert result.is_error and json.loads(result.content[0].text)["error"] == "not_found"


def test_tokens_of_another_audience_expired_or_signed_by_an_unknown_key_are_refused(oauth_server, issuer):
    issuer_url, key = issuer
    resource = oauth_server.base_url + "/mcp"
    good = signed(key, claims(issuer_url, resource), key["kid"])
    assert mcp_post(oauth_server, good).status_code == 200, "the issuer's key signs valid tokens"
    stranger = ec.generate_private_key(ec.SECP256R1())
    refused = {
        "another audience": signed(key, claims(issuer_url, oauth_server.base_url), key["kid"]),
        "expired": signed(key, claims(issuer_url, resource, exp=int(time.time()) - 120), key["kid"]),
        "unknown key": signed(stranger, claims(issuer_url, resource), "rotated-away"),
        "another issuer": signed(key, claims("http://127.0.0.1:1", resource), key["kid"]),
        "no tenant": signed(key, claims(issuer_url, resource, tenant=None), key["kid"]),
        "unsigned": jwt.encode(claims(issuer_url, resource), None, algorithm="none"),
        "HMAC with the public key": hmac_signed(claims(issuer_url, resource), key),
    }
    for why, token in refused.items():
        res = mcp_post(oauth_server, token)
        assert res.status_code == 401, why
        params = challenge(res)
        assert params["error"] == "invalid_token", why
        assert params["resource_metadata"].endswith("/.well-known/oauth-protected-resource/api/v1/mcp"), why


def test_after_a_key_rotation_tokens_of_the_new_key_are_accepted_and_unknown_kids_refused(
        oauth_server, issuer_process, issuer):
    issuer_url, first = issuer
    resource = oauth_server.base_url + "/mcp"
    # The server holds the first key (fetched by the tests above, or now).
    assert mcp_post(oauth_server, signed(first, claims(issuer_url, resource), first["kid"])).status_code == 200
    started = time.monotonic()
    new = issuer_process.rotate()
    assert new["kid"] != first["kid"]
    # The SDK logs in again: the issuer signs its token with the new key, which the server
    # does not hold yet; it fetches the keys again for that key id, at most once a period.
    time.sleep(max(0.0, REFETCH_SECS + 0.2 - (time.monotonic() - started)))
    (tools, me, hosts), token = with_sdk_oauth(oauth_server, "alice", me_and_machines)
    assert jwt.get_unverified_header(token)["kid"] == new["kid"], "signed with the new key"
    assert me["tenant"] == "acme" and hosts and "list_machines" in tools
    assert mcp_post(oauth_server, token).status_code == 200
    # The old key is still published: its tokens still pass until they expire.
    assert mcp_post(oauth_server, signed(first, claims(issuer_url, resource), first["kid"])).status_code == 200
    # A key id in no JWKS, even once the keys are fetched again: 401, never 503.
    time.sleep(REFETCH_SECS + 0.2)
    stranger = ec.generate_private_key(ec.SECP256R1())
    res = mcp_post(oauth_server, signed(stranger, claims(issuer_url, resource), "issuer-key-99"))
    assert res.status_code == 401 and challenge(res)["error"] == "invalid_token"
    assert res.json()["error"] == "unauthorized"

