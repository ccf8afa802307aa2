"""CORS in a real browser (Debian's Chromium, headless): a page served from another origin,
one of NETOPS_CORS_ORIGINS, calls the API with a bearer token (a preflighted request) and
reads the rate-limit headers; the browser's cache revalidates the answer with If-None-Match,
and the 304 costs no call. A page from an origin not on the list cannot read anything."""

import json
import pathlib
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import requests

from conftest import served

CHROMIUM = pathlib.Path("/usr/bin/chromium")

# The dashboard: two calls of /machines, as a page polling it would make, each reporting
# what the page can read of the answer.
PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>dashboard</title></head>
<body><script>
const base = %(base)s, token = %(token)s;
async function call() {
  const res = await fetch(base + "/machines?limit=100", {
    headers: {"Authorization": "Bearer " + token, "Accept-Language": "en"},
  });
  const body = await res.json();
  return {
    status: res.status,
    items: body.data ? body.data.length : null,
    limit: res.headers.get("X-RateLimit-Limit"),
    remaining: res.headers.get("X-RateLimit-Remaining"),
    reset: res.headers.get("X-RateLimit-Reset"),
    requestId: res.headers.get("X-Request-Id"),
    etag: res.headers.get("ETag"),
  };
}
(async () => {
  try {
    const first = await call();
    const second = await call();
    window.result = {first, second};
  } catch (e) {
    window.result = {error: String(e)};
  }
})();
</script></body></html>
"""


class PageServer:
    """A tiny site of its own origin (another port of 127.0.0.1) serving the dashboard."""

    def __init__(self):
        self.html = b""
        site = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(site.html)))
                self.end_headers()
                self.wfile.write(site.html)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.origin = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()


@pytest.fixture(scope="module")
def sites():
    allowed, other = PageServer(), PageServer()
    with served({"NETOPS_CORS_ORIGINS": f"https://dashboard.example.com,{allowed.origin}"}) as srv:
        for site in (allowed, other):
            site.html = (PAGE % {"base": json.dumps(srv.base_url), "token": json.dumps(srv.token)}).encode()
        yield srv, allowed, other
    allowed.close()
    other.close()


def run_page(url):
    """Opens `url` in Chromium; returns what the page could read, and what went over the
    wire: (request headers, status, answer headers) of each exchange."""
    from playwright.sync_api import sync_playwright

    seen = []
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=str(CHROMIUM),
            headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-quic",
                  "--no-first-run", "--disable-component-update", "--disable-sync"],
        )
        page = browser.new_page()
        # What went over the wire, preflights and revalidations included (the page's own
        # events show neither): the DevTools protocol's raw requests and answers.
        cdp = page.context.new_cdp_session(page)
        cdp.send("Network.enable")
        sent = {}
        cdp.on("Network.requestWillBeSentExtraInfo", lambda e: sent.setdefault(e["requestId"], e["headers"]))
        cdp.on("Network.responseReceivedExtraInfo",
               lambda e: seen.append((sent.get(e["requestId"], {}), e["statusCode"], e["headers"])))
        page.goto(url)
        page.wait_for_function("window.result !== undefined", timeout=30000)
        result = page.evaluate("window.result")
        browser.close()
    return result, seen


@pytest.mark.skipif(not CHROMIUM.exists(), reason="Chromium is installed by tests/run.sh")
def test_a_page_of_an_allowed_origin_calls_the_api_and_reads_the_rate_limit_headers(sites):
    srv, allowed, _ = sites
    result, seen = run_page(allowed.origin + "/")
    assert "error" not in result, result
    first, second = result["first"], result["second"]
    assert first["status"] == 200 and first["items"] > 0, first
    assert first["limit"] == "600"
    assert first["remaining"] is not None and first["remaining"].isdigit(), first
    assert first["reset"] is not None and first["requestId"], first
    assert first["etag"] and first["etag"].startswith('"'), first
    # The answer is private and revalidated: the browser's cache asked with If-None-Match, the
    # server said 304 (the page sees the stored 200), and that call cost nothing.
    assert second["status"] == 200 and second["items"] == first["items"], second
    assert second["etag"] == first["etag"]
    assert second["remaining"] == first["remaining"], (first, second)
    # On the wire: the token call was preflighted, without a token (no 401), and the second
    # call was the cache's revalidation, answered 304.
    lower = [({k.lower(): v for k, v in req.items()}, status, {k.lower(): v for k, v in res.items()})
             for req, status, res in seen]
    preflights = [(st, res) for req, st, res in lower if "access-control-request-method" in req]
    assert preflights and all(st == 200 for st, _ in preflights), seen
    assert all(res.get("access-control-allow-origin") == allowed.origin for _, res in preflights)
    assert all("authorization" not in req for req, _, _ in lower if "access-control-request-method" in req)
    revalidations = [(st, res) for req, st, res in lower if req.get("if-none-match") == first["etag"]]
    assert [st for st, _ in revalidations] == [304], seen
    assert revalidations[0][1].get("x-ratelimit-remaining") == first["remaining"]


@pytest.mark.skipif(not CHROMIUM.exists(), reason="Chromium is installed by tests/run.sh")
def test_a_page_of_another_origin_reads_nothing(sites):
    srv, _, other = sites
    result, _ = run_page(other.origin + "/")
    assert "error" in result and "fetch" in result["error"].lower(), result
    # What the browser got: the preflight fell through to the gate, without a CORS header.
    pre = requests.options(srv.base_url + "/machines", headers={
        "Origin": other.origin, "Access-Control-Request-Method": "GET"}, timeout=30)
    assert pre.status_code == 401
    assert not [h for h in pre.headers if h.lower().startswith("access-control-")], pre.headers
