"""A node's own credential: its report and its assignments, for that node alone; everything else 403.

lab: node-a and node-b, 4 GPUs each (NVLink), in lab-pool.
"""

import html
import io
from datetime import datetime, timedelta

from django.core.management import call_command
from rest_framework.test import APIClient

from identity.tokens import issue_node_token, revoke_token
from inventory.models import NodeLabel


def as_node(name):
    client = APIClient()
    token = issue_node_token(name)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client, token


def test_issue_token_node_prints_a_key_that_acts_for_that_node_only(lab):
    out = io.StringIO()
    call_command("issue_token", "--node", "node-a", stdout=out)
    key = out.getvalue().split()[0]
    assert "(node.node-a, expires " in out.getvalue()
    node = APIClient()
    node.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert node.get("/api/v1/nodes/node-a/assignments").status_code == 200
    assert (
        node.post("/api/v1/nodes/node-a/report", {"labels": {"bc.dev/rack": "r1"}}, format="json").status_code
        == 200
    )


def test_a_node_credential_may_do_nothing_else(lab, ask):
    node, _token = as_node("node-a")
    refused = {
        "other node's report": node.post("/api/v1/nodes/node-b/report", {"labels": {}}, format="json"),
        "other node's assignments": node.get("/api/v1/nodes/node-b/assignments"),
        "pools": node.get("/api/v1/pools"),
        "nodes": node.get("/api/v1/nodes"),
        "its own node": node.get("/api/v1/nodes/node-a"),
        "cordon": node.post("/api/v1/nodes/node-a/cordon", {}, format="json"),
        "reservations": node.get("/api/v1/reservations"),
        "create": node.post("/api/v1/reservations", ask(1), format="json"),
        "preview": node.post("/api/v1/capacity/preview", ask(1), format="json"),
        "a token for itself": node.post("/api/v1/nodes/node-a/token"),
        "metrics": node.get("/metrics"),
    }
    assert {what: r.status_code for what, r in refused.items()} == {what: 403 for what in refused}
    assert refused["pools"].json() == {
        "code": "FORBIDDEN",
        "message": "a node credential may only report for its node and read its assignments",
    }


def test_a_revoked_node_credential_is_refused_at_once(lab):
    node, token = as_node("node-a")
    assert node.get("/api/v1/nodes/node-a/assignments").status_code == 200
    revoke_token(token, by="test")
    assert node.get("/api/v1/nodes/node-a/assignments").status_code == 401


def test_operators_issue_node_credentials_and_read_any_nodes_feed(as_operator, as_acme, lab):
    issued = as_operator.post("/api/v1/nodes/node-b/token")
    assert issued.status_code == 200 and issued.json()["user"] == "node.node-b"
    node = APIClient()
    node.credentials(HTTP_AUTHORIZATION=f"Token {issued.json()['key']}")
    assert node.get("/api/v1/nodes/node-b/assignments").status_code == 200
    assert as_operator.get("/api/v1/nodes/node-a/assignments").status_code == 200
    assert as_acme.post("/api/v1/nodes/node-b/token").status_code == 403
    assert as_acme.get("/api/v1/nodes/node-a/assignments").status_code == 403
    assert as_operator.post("/api/v1/nodes/ghost/token").status_code == 404


def test_the_feed_names_each_devices_reservation_now_and_next_and_answers_304_when_unchanged(
    as_operator, as_acme, lab, ask
):
    """node-a: acme's 2 GPUs now for a day, then all 4 GPUs for the day after; node-b: nothing."""
    running = as_acme.post("/api/v1/reservations", ask(2), format="json").json()
    start = datetime.fromisoformat(running["end"].replace("Z", "+00:00"))
    window = {"start": start.isoformat(), "end": (start + timedelta(days=1)).isoformat()}
    later = {k: v for k, v in ask(4).items() if k != "duration"}
    later = as_acme.post("/api/v1/reservations", {**later, "during": window}, format="json").json()
    assert (running["status"], later["status"]) == ("placed", "placed")
    # Deterministic placement (TOP_N 1): the fullest node, ties on the name, both times.
    assert running["allocations"][0]["nodeId"] == later["allocations"][0]["nodeId"] == "node-a"

    response = as_operator.get("/api/v1/nodes/node-a/assignments")
    assert response.status_code == 200
    body, tag = response.json(), response["ETag"]
    assert body["node"] == "node-a" and body["state"] == {
        "name": "schedulable", "cordoned": False, "maintenance": False, "draining": False, "lease": None
    }  # fmt: skip
    by_uuid = {d["uuid"]: d for d in body["devices"]}
    held = sorted(u for u, d in by_uuid.items() if d["now"])
    assert held == sorted(running["allocations"][0]["atoms"])
    assert by_uuid[held[0]]["now"] == {
        "reservationId": running["id"], "tenantId": "acme", "priority": "regular", "end": running["end"],
        "idle": None, "preemptAt": None, "maintenance": None,
    }  # fmt: skip
    assert by_uuid[held[0]]["lent"] is None  # no spot work runs on it lent
    assert {d["next"]["reservationId"] for d in body["devices"]} == {later["id"]}

    again = as_operator.get("/api/v1/nodes/node-a/assignments", HTTP_IF_NONE_MATCH=tag)
    assert again.status_code == 304 and again["ETag"] == tag
    as_acme.post(f"/api/v1/reservations/{running['id']}/release", format="json")
    changed = as_operator.get("/api/v1/nodes/node-a/assignments", HTTP_IF_NONE_MATCH=tag)
    assert changed.status_code == 200 and changed["ETag"] != tag
    assert not any(d["now"] for d in changed.json()["devices"])


def test_the_admin_issues_node_credentials_for_the_selected_nodes(lab):
    import re

    from django.contrib.auth.models import User
    from django.test import Client

    from inventory.models import Node

    admin = Client()
    admin.force_login(User.objects.create_superuser("root", "root@example.com", "pw"))
    page = admin.get("/admin/inventory/node/")
    assert page.status_code == 200 and "Issue node credentials for the agents" in page.text
    chosen = Node.objects.get(name="node-b")
    answer = admin.post(
        "/admin/inventory/node/",
        {"action": "issue_node_credentials", "_selected_action": [chosen.pk]},
        follow=True,
    )
    keys = re.findall(
        r"Key for node\.node-b: ([0-9a-f]{40}) \(expires \d{4}-\d\d-\d\d \d\d:\d\d UTC\)", answer.text
    )
    assert len(keys) == 1, re.findall(r"<li class=\"[a-z]+\">(.*?)</li>", answer.text)  # whole, as issued
    node = APIClient()
    node.credentials(HTTP_AUTHORIZATION=f"Token {keys[0]}")
    assert node.get("/api/v1/nodes/node-b/assignments").status_code == 200
    assert node.get("/api/v1/nodes/node-a/assignments").status_code == 403
    assert "put this key in node node-b's agent token file" in html.unescape(answer.text)
    again = admin.post(
        "/admin/inventory/node/",
        {"action": "issue_node_credentials", "_selected_action": [chosen.pk]},
        follow=True,
    )
    assert "node node-b's previous key stopped working now" in html.unescape(again.text)
    assert node.get("/api/v1/nodes/node-b/assignments").status_code == 401


ISSUE_HINT = "manage.py issue_token --node node-a (or, as an operator, POST /api/v1/nodes/node-a/token)"


def test_a_tenant_token_on_an_agent_endpoint_is_told_to_use_the_nodes_own_credential(as_acme, lab):
    for response in (
        as_acme.get("/api/v1/nodes/node-a/assignments"),
        as_acme.post("/api/v1/nodes/node-a/report", {"labels": {}}, format="json"),
    ):
        assert response.status_code == 403
        assert response.json()["code"] == "FORBIDDEN"
        assert response.json()["message"] == (
            f"only operators and node node-a's own credential may do this; a node agent needs that "
            f"credential: {ISSUE_HINT}"
        )


def test_the_node_agent_is_refused_an_operators_token_which_operators_themselves_may_use(as_operator, lab):
    agent = {"HTTP_USER_AGENT": "berth-agent/1.1"}
    refused = [
        as_operator.get("/api/v1/nodes/node-a/assignments", **agent),
        as_operator.post(
            "/api/v1/nodes/node-a/report", {"labels": {"bc.dev/rack": "r9"}}, format="json", **agent
        ),
    ]
    for response in refused:
        assert (response.status_code, response.json()) == (
            403,
            {
                "code": "FORBIDDEN",
                "message": f"a node agent may not use an operator's token; give it node node-a's own "
                f"credential: {ISSUE_HINT}",
            },
        )
    assert not NodeLabel.objects.filter(node__name="node-a", value="r9").exists()
    assert as_operator.get("/api/v1/nodes/node-a/assignments").status_code == 200
    node, _token = as_node("node-a")
    assert node.get("/api/v1/nodes/node-a/assignments", **agent).status_code == 200


def test_issuing_a_node_key_again_says_the_agents_key_stopped_working(as_operator, lab):
    first = as_operator.post("/api/v1/nodes/node-a/token").json()
    assert first["replaced"] is False
    assert first["message"] == "put this key in node node-a's agent token file; it is shown once"
    agent = APIClient()
    agent.credentials(HTTP_AUTHORIZATION=f"Token {first['key']}")
    assert agent.get("/api/v1/nodes/node-a/assignments").status_code == 200
    second = as_operator.post("/api/v1/nodes/node-a/token").json()
    assert second["replaced"] is True
    assert second["message"] == (
        "node node-a's previous key stopped working now: its agent is refused (401) until its token "
        "file holds this key"
    )
    assert agent.get("/api/v1/nodes/node-a/assignments").status_code == 401


def test_issue_token_node_warns_that_the_previous_key_stops_working(lab):
    out, err = io.StringIO(), io.StringIO()
    call_command("issue_token", "--node", "node-a", stdout=out, stderr=err)
    assert "it is shown once" in err.getvalue()
    call_command("issue_token", "--node", "node-a", stdout=out, stderr=err)
    assert "node node-a's previous key stopped working now" in err.getvalue()
    assert len(out.getvalue().splitlines()) == 2  # the key lines alone, for scripts
