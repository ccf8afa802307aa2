"""NetDiag through the real `netops serve`: the simulated agents it starts for the demo machines
sync every 5 s and run an action in 2 s (the `server` fixture's settings)."""

import time

import requests


def _post(server, path, body):
    return requests.post(server.base_url + path, json=body, headers=server.headers(), timeout=30)


def _machine(server, status):
    machines = server.get("/netdiag/machines").json()["data"]
    return next(m["hostname"] for m in machines if m["status"] == status)


def test_a_speed_test_of_an_online_machine_reports_in_its_events(server):
    host = _machine(server, "online")
    res = _post(server, f"/netdiag/machines/{host}/actions", {"action": "speed"})
    assert res.status_code == 202
    action = res.json()["data"]
    assert action["status"] == "queued" and action["action"] == "speed"
    deadline = time.time() + 30
    found = []
    while time.time() < deadline and not found:
        time.sleep(0.5)
        events = server.get(f"/netdiag/machines/{host}/events?period=1h&source=speed").json()["data"]
        found = [e for e in events if e["details"].get("action_id") == action["action_id"]]
    assert found, "the machine's agent reports within a poll and the action's delay"
    details = found[0]["details"]
    assert details["down_mb"] == 20 and details["up_mb"] == 8
    assert details["down_mbps"] > 0 and details["up_mbps"] > 0


def test_no_agent_runs_the_action_of_an_offline_machine(server):
    host = _machine(server, "offline")
    res = _post(server, f"/netdiag/machines/{host}/actions", {"action": "trace"})
    assert res.status_code == 202
    action_id = res.json()["data"]["action_id"]
    time.sleep(8)
    events = server.get(f"/netdiag/machines/{host}/events?period=1h&source=trace").json()["data"]
    assert not [e for e in events if e["details"].get("action_id") == action_id]


def test_the_report_is_a_pdf(server):
    host = _machine(server, "online")
    res = server.get(f"/netdiag/machines/{host}/report.pdf?lang=en&tz=Asia/Tokyo")
    assert res.status_code == 200
    assert res.headers["Content-Type"] == "application/pdf"
    assert res.content.startswith(b"%PDF-")
    bad = server.get(f"/netdiag/machines/{host}/report.pdf?tz=Europe/Atlantis")
    assert bad.status_code == 400 and bad.json()["parameter"] == "tz"
