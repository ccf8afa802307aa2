"""Alerts over real HTTP: the feed, acknowledging an incident once, the write log."""

import json
import subprocess
import threading

import requests

from conftest import BINARY


def ack(server, alert_id, token, note=None):
    body = {} if note is None else {"note": note}
    return requests.post(
        f"{server.base_url}/alerts/{alert_id}/ack", headers=server.headers(token), json=body, timeout=30
    )


def test_open_alerts_and_a_single_successful_ack_under_concurrency(server):
    feed = server.get("/alerts?status=open&kind=siem")
    assert feed.status_code == 200
    items = feed.json()["data"]
    target = next(a for a in items if a["details"]["state"] == "OPEN")
    writer = server.create_token("write:alerts", "py-alerts-writer")
    results = []

    def call(k):
        results.append(ack(server, target["id"], writer, f"note {k}").status_code)

    threads = [threading.Thread(target=call, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == [200] + [409] * 7
    after = server.get("/alerts?status=open&kind=siem").json()["data"]
    acked = next(a for a in after if a["id"] == target["id"])
    assert acked["details"]["state"] == "ACKNOWLEDGED"
    assert acked["details"]["actions"][-1]["by"] == "py-alerts-writer"
    log = subprocess.run(
        [str(BINARY), "writes", "--tenant", "acme", "--db", server.db], check=True, capture_output=True, text=True
    ).stdout.splitlines()
    entries = [json.loads(line) for line in log if target["id"] in line]
    assert sorted(e["status"] for e in entries) == [200] + [409] * 7


def test_netdiag_ids_cannot_be_acknowledged(server):
    writer = server.create_token("write:alerts", "py-alerts-nd")
    res = ack(server, "nd-PAR-LT-0001-1", writer)
    assert res.status_code == 400
    assert res.json()["error"] == "invalid_parameter"
