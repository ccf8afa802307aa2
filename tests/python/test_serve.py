"""The real server over HTTP, as a script would use it."""


def test_printed_token_reads_machines(server):
    res = server.get("/machines?limit=3")
    assert res.status_code == 200
    body = res.json()
    assert len(body["data"]) == 3
    assert body["meta"]["limit"] == 3
    assert res.headers["X-RateLimit-Limit"] == "600"


def test_token_created_by_the_cli_works_at_once(server):
    token = server.create_token("read:dns", "py-narrow")
    assert token.startswith("nop_")
    assert server.get("/me", token=token).json()["data"]["scopes"] == ["read:dns"]
    res = server.get("/machines", token=token)
    assert res.status_code == 403
    assert res.json()["scope"] == "read:machines"
