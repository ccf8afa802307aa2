"""The MCP entry point as an assistant meets it: the official Python MCP SDK client (and the
official TypeScript one, tests/node/mcp-client.mjs) over streamable HTTP, in each of their
negotiation modes, against the real `netops serve` (docs/mcp.md)."""

import json
import os
import subprocess

import anyio
import pytest
import requests
from jsonschema import Draft202012Validator
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError

from test_clients import links_to, pointer

MODERN = "2026-07-28"
HANDSHAKE = ("2025-03-26", "2025-06-18", "2025-11-25")
TOKENS = os.path.join(os.path.dirname(__file__), "..", "node", "tokens.mjs")


@pytest.fixture(scope="module")
def full(server):
    """A full-scope token of its own, so these calls do not eat the demo token's quota."""
    return server.create_token("all", "mcp-python-full")


def connect(server, token=None, mode="auto", query=""):
    http = create_mcp_http_client(headers=server.headers(token))
    url = server.base_url + "/mcp" + query
    return http, Client(streamable_http_client(url, http_client=http), mode=mode)


def run(server, body, token=None, mode="auto", query=""):
    """Connects (in mode auto: `server/discover`, which finds 2026-07-28), runs
    `body(client)` and returns its value."""

    async def main():
        http, client = connect(server, token, mode, query)
        async with http, client:
            return await body(client)

    return anyio.run(main)


def structured(result):
    """The REST body of a tool result, checked to equal its text content."""
    assert result.content and result.content[0].type == "text"
    body = json.loads(result.content[0].text)
    assert body == result.structured_content
    return body


@pytest.mark.filterwarnings("ignore:ping is removed")  # the legacy mode's ping, before 2026-07-28
@pytest.mark.parametrize("mode", ["auto", MODERN, "legacy"])
def test_the_sdk_client_connects_in_each_of_its_modes(server, full, mode):
    """auto probes `server/discover` and adopts 2026-07-28; the version pinned needs no
    exchange at all before its first request; legacy runs the `initialize` handshake."""

    async def body(client):
        if mode == "auto":
            discovered = await client.session.discover()  # the probe's answer, adopted
            assert discovered.supported_versions == [MODERN, *reversed(HANDSHAKE)]
            assert discovered.ttl_ms > 0 and discovered.cache_scope == "private"
        if mode != MODERN:  # a pinned version sends no request before its first call
            assert client.server_info.name == "netops"
            assert client.server_capabilities.tools is not None
            assert client.server_capabilities.prompts is not None
        if mode == "legacy":
            assert client.protocol_version in HANDSHAKE
            await client.send_ping()
        else:
            assert client.protocol_version == MODERN
        tools = await all_tools(client)
        me = structured(await client.call_tool("get_me", {}))
        return client.protocol_version, len(tools), me

    version, count, me = run(server, body, token=full, mode=mode)
    assert count >= 58 and me["data"]["tenant"] == "acme"
    print(f"negotiated {version} in mode {mode}")


async def all_tools(client):
    """Every tool, page after page (`nextCursor`), so the client knows every output schema."""
    tools, cursor = [], None
    while True:
        page = await client.list_tools(cursor=cursor)
        tools += page.tools
        cursor = page.next_cursor
        if cursor is None:
            return tools


def test_a_full_scope_token_lists_every_read_tool_with_schemas(server, full):
    tools = run(server, all_tools, token=full)
    names = {t.name for t in tools}
    assert {"get_me", "list_machines", "get_machine"} <= names
    assert len(names) >= 58, "one tool per JSON read route"
    assert not names & {"mcp", "acknowledge_alert", "update_netdiag_settings", "start_netdiag_action",
                        "get_netdiag_report", "get_openapi", "get_docs"}
    for tool in tools:
        assert tool.description
        assert tool.input_schema["type"] == "object"
        assert tool.annotations and tool.annotations.read_only_hint is True
        assert tool.output_schema["type"] == "object" and tool.output_schema["required"] == ["data", "meta"]
        Draft202012Validator.check_schema(tool.output_schema)
    machine = next(t for t in tools if t.name == "get_machine")
    assert machine.input_schema["required"] == ["hostname"]
    machines = next(t for t in tools if t.name == "list_machines")
    assert machines.input_schema["properties"]["limit"]["maximum"] == 500
    sizes, cursor = [], None
    while True:
        res = requests.post(server.base_url + "/mcp", headers=server.headers(full), timeout=30,
                            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"cursor": cursor}})
        sizes.append(len(res.content))
        cursor = res.json()["result"].get("nextCursor")
        if cursor is None:
            break
    print(f"tools/list: {len(tools)} tools, pages of {sizes} bytes")
    assert all(size < 60 * 1024 for size in sizes)


def test_every_tool_answers_what_its_output_schema_says(server, full):
    """Each tool called once (its path arguments from the lists the document links to it):
    the SDK client checks `structuredContent` against the tool's `outputSchema`, and so does
    jsonschema here."""
    doc = server.get("/openapi.json", token="").json()
    sources = links_to(doc)
    paths = {op["operationId"]: path for path, item in doc["paths"].items() for op in item.values()}

    async def body(client):
        tools = await all_tools(client)
        out = []
        for tool in tools:
            args = {}
            for name in tool.input_schema.get("required", []):
                list_path, ptr = sources[tool.name][name]
                args[name] = str(pointer(server.get(list_path, token=full).json(), ptr))
            out.append((tool, await client.call_tool(tool.name, args)))
        return out

    results = run(server, body, token=full)
    assert len(results) >= 58
    for tool, result in results:
        assert not result.is_error, (tool.name, paths[tool.name], result.content[0].text[:300])
        Draft202012Validator(tool.output_schema).validate(structured(result))


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_tool_calls_return_the_rest_bodies(server, full, mode):
    rest = server.get("/machines", token=full, params={"status": "online", "limit": 3}).json()

    async def body(client):
        me = await client.call_tool("get_me", {})
        page = await client.call_tool("list_machines", {"status": "online", "limit": 3})
        first = structured(page)["data"][0]["hostname"]
        one = await client.call_tool("get_machine", {"hostname": first})
        missing = await client.call_tool("get_machine", {"hostname": "NOPE-0000"})
        bad = await client.call_tool("list_machines", {"limit": 0})
        return me, page, one, missing, bad, first

    me, page, one, missing, bad, first = run(server, body, token=full, mode=mode)
    assert not me.is_error and structured(me)["data"]["tenant"] == "acme"
    assert not page.is_error
    assert structured(page)["data"] == rest["data"]
    assert structured(page)["meta"]["limit"] == 3
    assert structured(one)["data"]["hostname"] == first
    assert missing.is_error and structured(missing)["error"] == "not_found"
    assert bad.is_error and structured(bad)["error"] == "invalid_parameter"


def test_cursor_pages_walk_through_the_tool(server, full):
    async def body(client):
        seen, cursor = [], None
        while True:
            args = {"limit": 20} | ({"cursor": cursor} if cursor else {})
            page = structured(await client.call_tool("list_machines", args))
            seen += [m["hostname"] for m in page["data"]]
            cursor = page["meta"]["next_cursor"]
            if cursor is None:
                return seen

    seen = run(server, body, token=full)
    assert len(seen) == len(set(seen)) == 60


def test_unknown_tools_are_protocol_errors(server, full):
    async def body(client):
        with pytest.raises(MCPError) as err:
            await client.call_tool("drop_database", {})
        return err.value.code

    assert run(server, body, token=full) == -32602


def test_a_narrow_token_sees_and_calls_only_its_tools(server):
    token = server.create_token("read:dns", "mcp-narrow-dns")

    async def body(client):
        tools = {t.name for t in (await client.list_tools()).tools}
        denied = await client.call_tool("list_machines", {})
        return tools, denied

    tools, denied = run(server, body, token=token)
    assert "get_me" in tools
    assert "list_machines" not in tools and "get_machine" not in tools
    assert all(name == "get_me" or "dns" in name for name in tools), tools
    assert denied.is_error
    assert structured(denied)["error"] == "forbidden"
    assert structured(denied)["scope"] == "read:machines"

    machines = server.create_token("read:machines", "mcp-narrow-machines")

    async def listed(client):
        return {t.name for t in (await client.list_tools()).tools}

    assert run(server, listed, token=machines) == {"get_me", "list_machines", "get_machine"}


def test_a_missing_token_is_refused_before_anything(server):
    res = requests.post(server.base_url + "/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, timeout=30)
    assert res.status_code == 401

    async def main():
        http = create_mcp_http_client()
        async with http, Client(streamable_http_client(server.base_url + "/mcp", http_client=http), mode="legacy"):
            pass

    with pytest.raises(BaseException):
        anyio.run(main)


def test_raw_protocol_answers(server, full):
    url, headers = server.base_url + "/mcp", server.headers(full)
    post = lambda body, **kw: requests.post(url, headers=headers | kw.pop("extra", {}), data=body, timeout=30)
    assert post('{"jsonrpc":"2.0","method":"notifications/initialized"}').status_code == 202
    res = post("{oops")
    assert res.status_code == 400 and res.json()["error"]["code"] == -32700
    res = post('{"jsonrpc":"2.0","id":1,"method":"server/discover"}')
    assert res.status_code == 200 and res.json()["error"]["code"] == -32601, "no discover before 2026-07-28"
    res = post('{"jsonrpc":"2.0","id":1,"method":"ping"}', extra={"MCP-Protocol-Version": "1999-01-01"})
    assert res.status_code == 400
    assert requests.get(url, headers=headers, timeout=30).status_code == 405
    assert requests.delete(url, headers=headers, timeout=30).status_code == 405


def test_tool_descriptions_are_english_unless_the_client_asks_for_french(server, full):
    def first_page(lang=None):
        headers = dict(server.headers(full), **({"Accept-Language": lang} if lang else {}))
        res = requests.post(server.base_url + "/mcp", headers=headers, timeout=30,
                            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        return {t["name"]: t for t in res.json()["result"]["tools"]}

    english, french, german = first_page(), first_page("fr-FR,fr;q=0.9"), first_page("de")
    machines = english["list_machines"]["description"]
    assert machines.startswith("Machines of the fleet") and "at most 500" in machines, machines
    assert "Paginé" in french["list_machines"]["description"]
    assert german["list_machines"]["description"] == machines, "English unless French is preferred"
    assert english["list_machines"]["outputSchema"] == french["list_machines"]["outputSchema"]


def modern_post(server, token, method, params=None, query=""):
    meta = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}
    headers = server.headers(token) | {"MCP-Protocol-Version": MODERN, "Mcp-Method": method}
    return requests.post(server.base_url + "/mcp" + query, headers=headers, timeout=30,
                         json={"jsonrpc": "2.0", "id": 1, "method": method, "params": (params or {}) | {"_meta": meta}})


def test_subscriptions_listen_is_refused_at_once_and_the_sdk_says_so(server, full):
    """This deployment answers JSON and holds no stream open (API Gateway HTTP API): the
    stream of 2026-07-28 is refused with the protocol's error, never left hanging."""
    res = modern_post(server, full, "subscriptions/listen")
    assert res.status_code == 404 and res.json()["error"]["code"] == -32601

    async def body(client):
        with anyio.fail_after(10), pytest.raises(MCPError) as err:
            async with client.listen(tools_list_changed=True):
                pass
        return err.value.code

    assert run(server, body, token=full) == -32601


def tokens(text):
    """Tokens of `text` for an o200k_base model (gpt-tokenizer, offline)."""
    out = subprocess.run(["node", TOKENS], input=text, capture_output=True, text=True, check=True, timeout=60)
    return int(out.stdout)


def test_toolsets_and_what_their_tool_lists_cost_in_tokens(server, full):
    """`?toolsets=` on the endpoint URL narrows the tools the SDK client loads; the whole
    JSON it loads (names, titles, descriptions, input and output schemas, annotations) is
    counted in tokens, for all tools and for each module's toolset."""
    names = modern_post(server, full, "tools/list", query="?toolsets=nope").json()["error"]["data"]["toolsets"]
    assert "flows" in names and "alerts" in names
    costs = {}
    for toolset in [None, *names]:
        query = f"?toolsets={toolset}" if toolset else ""
        tools = run(server, all_tools, token=full, query=query)
        loaded = json.dumps([t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools],
                            ensure_ascii=False, separators=(",", ":"))
        costs[toolset or "all"] = (len(tools), len(loaded.encode()), tokens(loaded))
    for name, (count, size, cost) in costs.items():
        print(f"tools/list {name}: {count} tools, {size} bytes, {cost} tokens (o200k_base)")
    assert sum(c for c, _, _ in list(costs.values())[1:]) == costs["all"][0], "each tool in one toolset"
    over = {n: c for n, (_, _, c) in costs.items() if n != "all" and c >= 4000}
    assert not over, f"one module's toolset costs 4,000 tokens or more: {over}"


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_prompts_through_the_sdk_in_english_and_french(server, full, mode):
    """Each prompt is listed with its arguments and gives one user message naming the tools
    to call; in French when the client asks for it; a prompt fetches nothing."""

    async def body(client):
        listed = (await client.list_prompts()).prompts
        got = await client.get_prompt("slow_network", {"hostname": "PC-0042", "period": "6h"})
        return listed, got

    listed, got = run(server, body, token=full, mode=mode)
    assert [p.name for p in listed] == ["slow_network", "what_changed", "triage_alert"]
    assert [a.name for a in listed[0].arguments] == ["hostname", "period"]
    assert listed[0].arguments[0].required and not listed[0].arguments[1].required
    text = got.messages[0].content.text
    assert got.messages[0].role == "user"
    assert 'list_netdiag_events {"hostname":"PC-0042","period":"6h"' in text, text

    async def french(client):
        return await client.get_prompt("triage_alert", {"alert_id": "hm-12"})

    http = create_mcp_http_client(headers=server.headers(full) | {"Accept-Language": "fr"})

    async def main():
        async with http, Client(streamable_http_client(server.base_url + "/mcp", http_client=http)) as client:
            return await french(client)

    text = anyio.run(main).messages[0].content.text
    assert text.startswith("Décide si l'alerte hm-12"), text


TS_CLIENT = os.path.join(os.path.dirname(__file__), "..", "node", "mcp-client.mjs")


@pytest.mark.parametrize("mode", ["auto", MODERN, "legacy"])
def test_the_typescript_sdk_client_in_each_of_its_modes(server, full, mode):
    """@modelcontextprotocol/client (tests/node, pinned): auto and the pinned 2026-07-28 speak
    the newest revision, legacy the newest it negotiates by `initialize` (2025-11-25)."""
    out = subprocess.run(["node", TS_CLIENT, mode, server.base_url + "/mcp"], capture_output=True, text=True,
                         timeout=120, env=os.environ | {"NETOPS_TOKEN": full})
    assert out.returncode == 0, out.stderr[-3000:]
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen["version"] == (HANDSHAKE[-1] if mode == "legacy" else MODERN), seen["version"]
    assert len(seen["tools"]) >= 58 and seen["annotated"]
    assert seen["tenant"] == "acme" and not seen["isError"]
    assert seen["prompts"] == ["slow_network", "what_changed", "triage_alert"]
    assert 'list_alerts {"period":"3h","status":"all"}' in seen["promptText"], seen["promptText"]
    print(f"TypeScript client, mode {mode}: {seen['version']}, {len(seen['tools'])} tools")
