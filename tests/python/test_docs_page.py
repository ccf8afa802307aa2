"""The interactive documentation page in a real browser (Debian's Chromium, headless): it
renders every operation from our own files only, and a "try it out" call with a token gets
a 200. A screenshot is kept in artifacts/docs-page.png."""

import pathlib
from urllib.parse import urlparse

import pytest

from conftest import ROOT

CHROMIUM = pathlib.Path("/usr/bin/chromium")
ARTIFACTS = ROOT / "artifacts"


@pytest.mark.skipif(not CHROMIUM.exists(), reason="Chromium is installed by tests/run.sh")
def test_docs_page_lists_operations_and_tries_a_route(server):
    from playwright.sync_api import sync_playwright

    origin = "{0.scheme}://{0.netloc}".format(urlparse(server.base_url))
    elsewhere = []
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=str(CHROMIUM),
            headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-quic",
                  "--no-first-run", "--disable-component-update", "--disable-sync"],
        )
        page = browser.new_page(viewport={"width": 1280, "height": 1600})
        page.on("request", lambda r: None if r.url.startswith((origin, "data:")) else elsewhere.append(r.url))
        page.goto(server.base_url + "/docs")
        page.wait_for_selector(".opblock", timeout=30000)
        expected = len([op for item in server.get("/openapi.json").json()["paths"].values() for op in item])
        assert page.locator(".opblock").count() == expected

        # Paste the token in "Authorize".
        page.click("button.authorize")
        page.fill(".auth-container input", server.token)
        page.click(".auth-btn-wrapper button.authorize")
        page.click(".auth-btn-wrapper button.btn-done")

        op = page.locator("#operations-fleet-list_machines")
        op.locator(".opblock-summary").click()
        op.locator("button.try-out__btn").click()
        op.locator("button.execute").click()
        status = op.locator(".live-responses-table .response .response-col_status").first
        status.wait_for(timeout=30000)
        assert status.inner_text().strip().startswith("200")
        status.scroll_into_view_if_needed()
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "docs-page.png"))
        browser.close()
    assert elsewhere == [], f"the page loaded something from elsewhere: {elsewhere}"
