"""The audit names who changed what and in which request: bookings, nodes, shares, policy, quota, tokens."""

from datetime import timedelta

import pytest
from django.utils import timezone

from capacity.models import ReservationEvent
from trail.models import AuditRecord


def audit(client, **query):
    answer = client.get("/api/v1/audit", query)
    assert answer.status_code == 200, answer.json()
    return answer.json()["results"]


def test_a_booking_and_its_release_name_the_user_and_each_request(as_operator, as_acme, lab, ask):
    made = as_acme.post("/api/v1/reservations", ask(2), format="json", headers={"X-Request-Id": "book-1"})
    assert made.status_code == 201 and made["X-Request-Id"] == "book-1"
    pk = made.json()["id"]
    as_acme.post(f"/api/v1/reservations/{pk}/release", headers={"X-Request-Id": "release-1"})
    rows = audit(as_operator, object=f"reservation:{pk}")
    assert [(r["action"], r["actor"], r["requestId"]) for r in rows] == [
        ("reservation.released", "acme", "release-1"),
        ("reservation.placed", "acme", "book-1"),
        ("reservation.pending", "acme", "book-1"),
    ]
    assert [r["action"] for r in audit(as_operator, actor="acme")][:3] == [r["action"] for r in rows]


def test_what_the_worker_changes_reads_as_the_systems(as_operator, as_acme, lab, ask):
    from capacity import services

    pk = as_acme.post("/api/v1/reservations", ask(1), format="json").json()["id"]
    services.expire_ended(now=timezone.now() + timedelta(days=2))
    (ended,) = audit(as_operator, object=f"reservation:{pk}", action="reservation.released")
    assert (ended["actor"], ended["requestId"]) == ("system", None)
    assert ended in audit(as_operator, actor="system")
    assert all(r["actor"] == "acme" for r in audit(as_operator, actor="acme"))


def test_a_command_is_named_as_the_command(as_operator, as_acme, lab, ask):
    from io import StringIO

    from django.core.management import call_command

    pk = as_acme.post("/api/v1/reservations", ask(1), format="json").json()["id"]
    call_command("release", str(pk), stdout=StringIO())
    (released,) = audit(as_operator, object=f"reservation:{pk}", action="reservation.released")
    assert released["actor"] == "command:release" and released["requestId"] is None


def test_accept_devices_is_named_as_the_command_not_the_system(as_operator, lab):
    from io import StringIO

    from django.core.management import call_command

    from inventory.models import Device, Node

    node = Node.objects.order_by("name").first()
    Device.objects.filter(pk=node.devices.order_by("index").first().pk).update(verified=False, bookable=False)
    call_command("accept_devices", node.name, "--reason", "new card", stdout=StringIO())
    (accepted,) = audit(as_operator, object=f"node:{node.name}", action="node.accept")
    assert (accepted["actor"], accepted["reason"]) == ("command:accept_devices", "new card")
    assert audit(as_operator, actor="command:accept_devices") == [accepted]


def test_a_node_action_names_its_request(as_operator, lab):
    as_operator.post(
        "/api/v1/nodes/node-b/cordon", {"reason": "fan"}, format="json", headers={"X-Request-Id": "cordon-7"}
    )
    (row,) = audit(as_operator, action="node.cordon")
    assert (row["actor"], row["requestId"], row["reason"]) == ("operator", "cordon-7", "fan")


def test_shares_are_recorded_before_and_after_and_a_refused_change_records_nothing(as_operator, lab, tenant):
    url = "/api/v1/pools/lab-pool/shares/acme"
    body = {"guaranteedGpus": 3, "borrowingLimitGpus": None, "lendingLimitGpus": None}
    as_operator.put(url, body, format="json", headers={"X-Request-Id": "share-1"})
    as_operator.put(url, body | {"guaranteedGpus": 5}, format="json")
    as_operator.put(url, body | {"guaranteedGpus": 5}, format="json")  # no change: no row
    assert as_operator.put(url, body | {"guaranteedGpus": 99}, format="json").status_code == 400
    as_operator.delete(url)
    rows = audit(as_operator, object="share:lab-pool/acme")
    assert [(r["action"], r["actor"]) for r in rows] == [("share.delete", "operator")] + [
        ("share.set", "operator")
    ] * 2
    deleted, changed, created = rows
    assert created["before"] is None and created["after"]["guaranteed_gpus"] == 3
    assert created["requestId"] == "share-1"
    assert (changed["before"]["guaranteed_gpus"], changed["after"]["guaranteed_gpus"]) == (3, 5)
    assert deleted["before"]["guaranteed_gpus"] == 5 and deleted["after"] is None


def test_a_policy_change_lists_the_fields_it_changed(as_operator, lab):
    as_operator.put("/api/v1/pools/lab-pool/policy", {"idleReleaseAfter": "4h"}, format="json")
    (row,) = audit(as_operator, action="policy.set")
    assert row["object"] == "policy:lab-pool" and row["after"] == {"idleReleaseAfter": "4h"}
    assert list(row["before"]) == ["idleReleaseAfter"]


def test_quota_changes_in_the_admin_are_recorded_in_its_transaction(as_operator, tenant):
    from django.contrib.auth import get_user_model
    from django.test import Client

    from capacity.models import Quota

    client = Client()
    client.force_login(get_user_model().objects.create_superuser("root", password="x"))
    form = {"tenant": tenant.pk, "resource": "gpu", "limit": 8}
    assert client.post("/admin/capacity/quota/add/", form).status_code == 302
    quota = Quota.objects.get(tenant=tenant, resource="gpu")
    client.post(f"/admin/capacity/quota/{quota.pk}/change/", form | {"limit": 16})
    assert client.post("/admin/capacity/quota/add/", form).status_code == 200  # a duplicate: refused
    client.post(
        "/admin/capacity/quota/",
        {"action": "delete_selected", "_selected_action": [quota.pk], "post": "yes"},
    )
    assert not Quota.objects.filter(pk=quota.pk).exists()
    rows = audit(as_operator, object="quota:acme/gpu")
    assert [(r["action"], r["actor"], r["before"], r["after"]) for r in rows] == [
        ("quota.delete", "root", {"limit": 16}, None),
        ("quota.set", "root", {"limit": 8}, {"limit": 16}),
        ("quota.set", "root", None, {"limit": 8}),
    ]


def test_api_tokens_issued_and_revoked_are_recorded_without_their_key(as_operator, acme, client_for):
    from identity.tokens import issue_token

    key = issue_token(acme, days=30).key
    client = client_for(acme)
    client.post("/api/v1/token/revoke", headers={"X-Request-Id": "revoke-1"})
    rows = audit(as_operator, object="token:acme")
    assert [(r["action"], r["actor"]) for r in rows] == [("token.revoke", "acme"), ("token.issue", "system")]
    revoked, issued = rows
    assert revoked["requestId"] == "revoke-1" and revoked["reason"] == "acme (API)"
    assert issued["before"] == {"replaced": True} and "expiresAt" in issued["after"]
    assert key not in str(rows)


def test_the_trail_is_kept_the_audit_days_and_reservation_events_for_good(
    as_operator, settings, lab, as_acme, ask
):
    from capacity.worker_jobs import JOBS
    from trail.record import record

    settings.AUDIT_DAYS = 400
    as_acme.post("/api/v1/reservations", ask(1), format="json")
    record("quota.set", "quota:acme/gpu", after={"limit": 1})
    record("quota.set", "quota:acme/vcpu", after={"limit": 1})
    long_ago = timezone.now() - timedelta(days=401)
    AuditRecord.objects.filter(object="quota:acme/gpu").update(at=long_ago)
    ReservationEvent.objects.update(at=long_ago)
    assert JOBS["audit-retention"].run_once() == "deleted 0 sign-ins and 1 changes older than 400 days"
    assert list(AuditRecord.objects.values_list("object", flat=True)) == ["quota:acme/vcpu"]
    assert ReservationEvent.objects.count() == 2


@pytest.mark.parametrize("query", ["actor=nobody", "action=quota.set", "object=quota:acme/none"])
def test_filters_reach_the_trail_and_answer_nothing_for_a_stranger(as_operator, tenant, query):
    from trail.record import record

    record("quota.set", "quota:acme/gpu", after={"limit": 1})
    field, _, value = query.partition("=")
    rows = audit(as_operator, **{field: value})
    assert [r["object"] for r in rows] == (["quota:acme/gpu"] if query == "action=quota.set" else [])


def test_tokens_added_and_deleted_in_the_admin_are_recorded(as_operator, make_user):
    from django.contrib.auth import get_user_model
    from django.test import Client
    from rest_framework.authtoken.models import Token

    pat = get_user_model().objects.create_user("pat")
    client = Client()
    client.force_login(get_user_model().objects.create_superuser("root", password="x"))
    assert client.post("/admin/authtoken/tokenproxy/add/", {"user": pat.pk}).status_code == 302
    key = Token.objects.get(user=pat).key
    client.post(
        "/admin/authtoken/tokenproxy/",
        {"action": "delete_selected", "_selected_action": [key], "post": "yes"},
    )
    assert not Token.objects.filter(user=pat).exists()
    rows = audit(as_operator, object="token:pat")
    assert [(r["action"], r["actor"]) for r in rows] == [("token.delete", "root"), ("token.issue", "root")]
    assert key not in str(rows)


def test_tokens_issued_and_revoked_by_command_name_the_command(as_operator, acme):
    from io import StringIO

    from django.core.management import call_command

    call_command("issue_token", "acme", stdout=StringIO())
    call_command("revoke_token", "acme", stdout=StringIO())
    actors = [r["actor"] for r in audit(as_operator, object="token:acme")]
    assert actors == ["command:revoke_token", "command:issue_token"]
