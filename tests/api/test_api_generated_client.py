"""A Python client generated from /api/schema/ by openapi-python-client works unmodified.

The client is generated into a temporary folder (no network: its ruff post-hooks are turned off in
its config file) and imported from there, then driven against a live server as a tenant and an
operator through pools, shares, preview, create, a series, approvals, reclaim, usage (JSON and
CSV), webhooks (a 404 among them), maintenance and the audit. Every answer is parsed into the
client's own types: a schema that says less, or other, than the API answers fails here.
"""

import importlib
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

PACKAGE = "berth_client"
CONFIG = f"post_hooks: []\npackage_name_override: {PACKAGE}\nproject_name_override: berth-client\n"


@pytest.fixture(scope="module")
def generated(tmp_path_factory, django_db_blocker):
    """Generate the client from the app's schema and import it."""
    from django.test import Client

    folder = tmp_path_factory.mktemp("client")
    with django_db_blocker.unblock():
        (folder / "schema.json").write_bytes(Client().get("/api/schema/?format=json").content)
    (folder / "config.yaml").write_text(CONFIG)
    generator = Path(sys.executable).parent / "openapi-python-client"
    done = subprocess.run(
        [generator, "generate", "--path", "schema.json", "--config", "config.yaml", "--meta", "none"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    sys.path.insert(0, str(folder))
    try:
        yield importlib.import_module(PACKAGE)
    finally:
        sys.path.remove(str(folder))
        for name in [m for m in sys.modules if m == PACKAGE or m.startswith(f"{PACKAGE}.")]:
            del sys.modules[name]


def api(module: str):
    return importlib.import_module(f"{PACKAGE}.api.{module}")


def model(name: str):
    return getattr(importlib.import_module(f"{PACKAGE}.models"), name)


def at(hours: int) -> str:
    now = timezone.now().replace(minute=0, second=0, microsecond=0)
    return (now + timedelta(hours=hours)).isoformat()


@pytest.fixture
def served(generated, transactional_db, live_server, monkeypatch, two_labelled_hosts, operator, acme):
    """Clients of the live server for tenant acme and the operator (webhooks may target loopback)."""
    monkeypatch.setenv("BERTH_WEBHOOKS_ALLOW_PRIVATE", "1")
    url = live_server.url

    def client(user):
        return generated.AuthenticatedClient(
            base_url=url, token=user.auth_token.key, prefix="Token", raise_on_unexpected_status=True
        )

    clients = client(acme), client(operator)
    yield clients
    for made in clients:  # no kept-alive connection holds a server thread, nor its database session
        made.get_httpx_client().close()


def booking(gpus: int, start: int, end: int, **extra):
    body = {
        "tenantId": "acme",
        "poolId": "lab-pool",
        "devices": [{"class": "gpu", "count": gpus}],
        "during": {"start": at(start), "end": at(end)},
        **extra,
    }
    return model("ReservationInput").from_dict(body)


def test_a_generated_client_books_reads_and_exports(served):
    tenant, operator = served
    Reservation, SeriesAnswer, Error = model("Reservation"), model("SeriesAnswer"), model("Error")

    pools = api("pools.pools_list").sync(client=tenant)
    assert [p.id for p in pools.results] == ["lab-pool"] and pools.next_ is None

    share = api("pools.pools_shares_set").sync(
        client=operator,
        pool="lab-pool",
        tenant="acme",
        body=model("ShareInput").from_dict({"guaranteedGpus": 4}),
    )
    assert share.guaranteed_gpus == 4
    shares = api("pools.pools_shares_list").sync(client=tenant, pool="lab-pool")
    assert [s.tenant_id for s in shares.results] == ["acme"] and shares.next_ is None

    preview = api("capacity.capacity_preview").sync(client=tenant, body=booking(2, 2, 4))
    assert preview.fits is True

    made = api("reservations.reservations_create").sync(client=tenant, body=booking(2, 2, 4))
    assert isinstance(made, Reservation) and made.status == "placed" and made.series_id is None
    assert made.request.pool_id == "lab-pool" and made.awaiting_approval is None

    series = api("reservations.reservations_create").sync(
        client=tenant, body=booking(1, 5, 6, repeat={"freq": "daily", "count": 2})
    )
    assert isinstance(series, SeriesAnswer) and len(series.series.occurrences) == 2
    read = api("reservations.series_get").sync(client=tenant, series_id=series.series.id)
    assert read.series.repeat.count == 2
    released = api("reservations.series_release").sync(client=tenant, series_id=series.series.id)
    assert sorted(released.released) == sorted(o.reservation_id for o in series.series.occurrences)

    reclaimed = api("reservations.reservations_reclaim").sync(client=tenant, reservation_id=made.id)
    assert reclaimed.reclaimed == 0 and reclaimed.preempt_at is None and reclaimed.reservation.id == made.id

    policy = api("pools.pools_policy_set").sync(
        client=operator,
        pool="lab-pool",
        body=model("PolicyInput").from_dict({"approvalAboveGpuHours": 10}),
    )
    assert policy.approval_above_gpu_hours == 10
    held = api("reservations.reservations_create").sync(client=tenant, body=booking(2, 30, 40))
    assert held.awaiting_approval is not None
    approved = api("reservations.reservations_approve").sync(client=operator, reservation_id=held.id)
    assert approved.awaiting_approval is None
    refused = api("reservations.reservations_approve").sync(client=operator, reservation_id=held.id)
    assert isinstance(refused, Error) and refused.code == "CONFLICT"

    # The period names its days: by default it ends today, and after 20:00 UTC these bookings are tomorrow's.
    today = timezone.now().date()
    period = {"from_": today.isoformat(), "to": (today + timedelta(days=2)).isoformat()}
    usage = api("usage.usage_report").sync(client=tenant, group_by="tenant,pool", **period)
    assert usage.rows[0].tenant_id == "acme" and usage.rows[0].gpu_hours_booked_ahead > 0
    csv = api("usage.usage_report_csv").sync(client=tenant, group_by="tenant", **period)
    assert csv.splitlines()[0].startswith("tenantId,bucket,gpuHoursBooked")
    assert csv.splitlines()[1].startswith("acme,")

    hook = api("webhooks.webhooks_create").sync(
        client=tenant,
        body=model("Subscribe").from_dict(
            {"url": "http://127.0.0.1:9/hook", "events": ["reservation.placed", "webhook.test"]}
        ),
    )
    assert hook.secret.startswith("whsec_")
    queued = api("webhooks.webhooks_test").sync(client=tenant, webhook_id=str(hook.id))
    deliveries = api("webhooks.webhooks_deliveries").sync(client=tenant, webhook_id=str(hook.id))
    assert [d.id for d in deliveries.results] == [queued.delivery_id] and deliveries.next_ is None
    assert deliveries.results[0].type_ == "webhook.test"
    missing = api("webhooks.webhooks_get").sync(client=operator, webhook_id=str(hook.id))
    assert isinstance(missing, Error) and missing.code == "NOT_FOUND"

    window = api("maintenance.maintenance_create").sync(
        client=operator,
        body=model("MaintenanceWindowInput").from_dict(
            {"nodes": ["node-b"], "start": at(50), "end": at(52), "reason": "firmware"}
        ),
    )
    windows = api("maintenance.maintenance_list").sync(client=tenant)
    assert [w.id for w in windows.results] == [window.id]

    audit = api("audit.audit_list").sync(client=operator, page_size=5)
    assert len(audit.results) == 5 and audit.next_
    assert api("audit.audit_list_csv").sync(client=operator, page_size=5).startswith("at,actor,action")
    refused = api("audit.audit_list").sync(client=tenant)
    assert isinstance(refused, Error) and refused.code == "FORBIDDEN"
