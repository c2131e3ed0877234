"""`/metrics`: what operators and the scrape token read after placements by both placers, and who may not."""

import dataclasses
import subprocess
import sys

import pytest
from prometheus_client.parser import text_string_to_metric_families

from capacity import services
from capacity.conf import placer_config
from capacity.models import Reservation
from capacity.placers.attempt import gave_up
from capacity.placers.batch import place_queued
from capacity.placers.types import PlacerConfig
from inventory import services as nodes
from metrics.events import outcome_of
from metrics.store import SharedFilesCollector, fold_dead

pytestmark = pytest.mark.django_db(transaction=True)


def body(gpus=1, tenant="acme", **extra):
    """Return a request for `gpus` GPUs in lab-pool for a day from now (the real clock)."""
    return {
        "tenantId": tenant,
        "poolId": "lab-pool",
        "devices": [{"class": "gpu", "count": gpus}],
        "duration": "1d",
        **extra,
    }


def scrape(client) -> dict[tuple[str, tuple], float]:
    """GET /metrics and parse it: (sample name, sorted labels) -> value."""
    response = client.get("/metrics")
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain; version=0.0.4")
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(response.content.decode())
        for s in family.samples
    }


def value(samples, name, **labels) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def delta(before, after, name, **labels) -> float:
    return value(after, name, **labels) - value(before, name, **labels)


def lease_config():
    return dataclasses.replace(placer_config(), placer="pool-lease", random=None)


def test_a_scrape_counts_what_each_placer_placed_and_reads_pending_and_capacity_from_the_database(
    as_operator, as_acme, lab
):
    """lab-pool: node-a and node-b, 4 GPUs each.

    inline: 2 + 2 GPUs placed, 8 pending. pool-lease (one batch): 1 + 1 + 1 placed, 4 pending.
    """
    before = scrape(as_operator)
    for gpus in (2, 2, 8):
        assert as_acme.post("/api/v1/reservations", body(gpus), format="json").status_code == 201
    config = lease_config()
    queued = [services.reserve(body(gpus), config=config).reservation for gpus in (1, 1, 1, 4)]
    assert all(services.is_queued(r) for r in queued)
    mid = scrape(as_operator)
    assert value(mid, "berth_pending_reservations", pool="lab-pool", reason="queued") == 4
    assert value(mid, "berth_queued_oldest_seconds", pool="lab-pool") >= 0
    result = place_queued(config)  # what the worker's round runs
    assert (len(result.placed), len(result.pending)) == (3, 1)
    after = scrape(as_operator)

    placements = "berth_placements_total"
    assert delta(before, after, placements, placer="inline", outcome="placed") == 2
    assert delta(before, after, placements, placer="inline", outcome="pending") == 1
    assert delta(before, after, placements, placer="pool-lease", outcome="placed") == 3
    assert delta(before, after, placements, placer="pool-lease", outcome="pending") == 1
    for placer in ("inline", "pool-lease"):
        assert delta(before, after, "berth_placement_lost_races_total", placer=placer) == 0
        assert delta(before, after, "berth_preemptions_total", placer=placer) == 0
    batch = {"placer": "pool-lease"}
    assert delta(before, after, "berth_placement_batch_size_count", **batch) == 1
    assert delta(before, after, "berth_placement_batch_size_sum", **batch) == 4
    assert delta(before, after, "berth_placement_batch_size_bucket", le="2.0", **batch) == 0
    assert delta(before, after, "berth_placement_batch_size_bucket", le="4.0", **batch) == 1
    assert delta(before, after, "berth_placement_queue_seconds_count", **batch) == 3
    assert delta(before, after, "berth_placement_queue_seconds_bucket", le="+Inf", **batch) == 3

    # State, read from the database: 8 GPUs and 4 GPUs pending, 7 of 8 GPUs booked now.
    pending = Reservation.objects.filter(status="pending", pool__slug="lab-pool")
    assert pending.count() == 2
    assert value(after, "berth_pending_reservations", pool="lab-pool", reason="no_fit") == pending.count()
    assert sum(v for (n, _), v in after.items() if n == "berth_pending_reservations") == pending.count()
    assert value(after, "berth_queued_oldest_seconds", pool="lab-pool") == 0
    gpu = {"pool": "lab-pool", "device_class": "gpu"}
    assert value(after, "berth_capacity_total_atoms", **gpu) == 8
    assert value(after, "berth_capacity_atoms", state="booked", **gpu) == 7
    assert value(after, "berth_capacity_atoms", state="free", **gpu) == 1
    assert value(after, "berth_capacity_atoms", state="maintenance", **gpu) == 0


def test_pending_reservations_are_grouped_by_kind_of_reason_as_the_database_holds_them(
    as_operator, lab, tenant, other_tenant
):
    """Two no-fit messages that differ, a quota refusal on retry, an archived pool: three groups."""
    from capacity.models import Quota
    from inventory.models import Pool

    for _ in range(2):  # globex fills the pool's two 4-GPU nodes
        assert services.reserve(body(4, tenant="globex")).reservation.status == "placed"
    services.reserve(body(3))
    services.reserve(body(2))
    Quota.objects.create(tenant=tenant, resource="gpu", limit=1)
    services.retry_pending([Pool.objects.get(slug="lab-pool").pk])  # both are now refused by quota
    services.reserve(body(6, tenant="globex"))  # no node has 6 GPUs: no fit, for good
    Pool.objects.filter(slug="lab-pool").update(archived=True)
    services.reserve(body(1, tenant="globex"))
    samples = scrape(as_operator)

    pending = Reservation.objects.filter(status="pending")
    assert pending.count() == 4
    groups = {
        reason: value(samples, "berth_pending_reservations", pool="lab-pool", reason=reason)
        for reason in ("quota_exceeded", "no_fit", "pool_archived", "queued", "other")
    }
    assert groups == {"quota_exceeded": 2, "no_fit": 1, "pool_archived": 1, "queued": 0, "other": 0}
    assert sum(v for (n, _), v in samples.items() if n == "berth_pending_reservations") == pending.count()


def test_regular_work_that_takes_spot_work_back_counts_as_preempting(as_operator, lab, tenant, other_tenant):
    before = scrape(as_operator)
    for _ in range(2):
        services.reserve(body(4, tenant="globex", priority="spot"))
    taker = services.reserve(body(4)).reservation
    assert taker.status == "placed"
    after = scrape(as_operator)
    assert delta(before, after, "berth_placements_total", placer="inline", outcome="preempting") == 1
    assert delta(before, after, "berth_placements_total", placer="inline", outcome="placed") == 2
    assert delta(before, after, "berth_preemptions_total", placer="inline") == 1


def test_a_repair_that_moves_a_booking_off_a_node_in_maintenance_is_counted(as_operator, lab, tenant):
    before = scrape(as_operator)
    reservation = services.reserve(body(2)).reservation
    [allocation] = services.allocations_of(reservation)
    nodes.set_maintenance(allocation["nodeId"], True)
    after = scrape(as_operator)
    assert delta(before, after, "berth_repairs_total", kind="repair", outcome="moved") == 1
    assert value(after, "berth_repair_pending_reservations", pool="lab-pool") == 0


def test_giving_up_after_lost_races_is_the_lost_race_outcome():
    config = PlacerConfig(max_attempts=3)
    outcome = gave_up(config, ["node-a was booked", "node-b was booked", "node-c was booked"])
    assert outcome_of(outcome.status, outcome.reason) == "lost_race"
    assert outcome_of("pending", "no node fits (2 nodes): 2 × cordoned") == "pending"
    assert outcome_of("placed", preempted=(7,)) == "preempting"


@pytest.mark.parametrize(
    ("accept", "content_type"),
    [
        ("text/plain", "text/plain; version=0.0.4"),
        ("application/openmetrics-text; version=1.0.0", "application/openmetrics-text; version=1.0.0"),
    ],
)
def test_the_format_follows_what_the_scraper_accepts(as_operator, lab, accept, content_type):
    response = as_operator.get("/metrics", HTTP_ACCEPT=accept)
    assert response.status_code == 200
    assert response["Content-Type"].startswith(content_type)
    text = response.content.decode()
    assert 'berth_capacity_total_atoms{device_class="gpu",pool="lab-pool"} 8' in text


def test_a_tenant_that_accepts_only_text_is_still_refused_in_json(as_acme, lab):
    response = as_acme.get("/metrics", HTTP_ACCEPT="text/plain")
    assert response.status_code == 403
    assert response.json()["code"] == "FORBIDDEN"


def test_a_tenant_is_refused_with_403_and_reads_no_numbers(as_acme, lab):
    response = as_acme.get("/metrics")
    assert response.status_code == 403
    assert response.json() == {"code": "FORBIDDEN", "message": "only operators may read metrics"}


def test_an_anonymous_caller_is_asked_to_authenticate(anonymous, lab):
    response = anonymous.get("/metrics")
    assert response.status_code == 401
    assert response.json()["code"] == "UNAUTHENTICATED"
    assert response["WWW-Authenticate"] == 'Bearer realm="metrics"'


def test_the_configured_scrape_token_reads_metrics_and_another_is_refused(anonymous, lab, settings):
    settings.BERTH_METRICS_TOKEN = "s3cret-scrape-token"
    anonymous.credentials(HTTP_AUTHORIZATION="Bearer s3cret-scrape-token")
    assert value(scrape(anonymous), "berth_capacity_total_atoms", pool="lab-pool", device_class="gpu") == 8
    anonymous.credentials(HTTP_AUTHORIZATION="Bearer s3cret-scrape-tokeN")
    assert anonymous.get("/metrics").status_code == 401


def test_a_bearer_token_is_refused_when_none_is_configured(anonymous, lab, settings, monkeypatch):
    settings.BERTH_METRICS_TOKEN = ""
    monkeypatch.delenv("BERTH_METRICS_TOKEN", raising=False)
    anonymous.credentials(HTTP_AUTHORIZATION="Bearer ")
    assert anonymous.get("/metrics").status_code == 401
    anonymous.credentials(HTTP_AUTHORIZATION="Bearer anything")
    assert anonymous.get("/metrics").status_code == 401


def test_an_operator_logged_in_in_the_browser_reads_metrics(client, operator, lab):
    client.force_login(operator)
    response = client.get("/metrics")
    assert response.status_code == 200
    assert b"berth_capacity_atoms{" in response.content


def test_a_tenant_logged_in_in_the_browser_is_refused(client, acme, lab):
    client.force_login(acme)
    assert client.get("/metrics").status_code == 403


COUNT_AND_EXIT = """
import os, sys
from prometheus_client import Counter
Counter("berth_test_events", "Test events.", ["kind"], registry=None).labels("a").inc(int(sys.argv[1]))
"""


def test_counts_of_exited_processes_are_folded_into_the_archive_and_never_lost(tmp_path, monkeypatch):
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))

    def total():
        [family] = [f for f in SharedFilesCollector(tmp_path).collect() if f.name == "berth_test_events"]
        return sum(s.value for s in family.samples)

    for amount in (5, 2):
        subprocess.run([sys.executable, "-c", COUNT_AND_EXIT, str(amount)], check=True)
    assert len(list(tmp_path.glob("counter_*.db"))) == 2
    assert total() == 7
    assert fold_dead(tmp_path) == 2
    assert [p.name for p in tmp_path.glob("*.db")] == ["counter_archive.db"]
    assert total() == 7
    subprocess.run([sys.executable, "-c", COUNT_AND_EXIT, "3"], check=True)
    assert fold_dead(tmp_path) == 1
    assert total() == 10


def test_moves_off_a_draining_node_count_as_a_drain_not_a_repair(as_operator, lab, tenant):
    from maintenance.drain import drain

    before = scrape(as_operator)
    ask = {k: v for k, v in body(2).items() if k != "duration"}
    later = services.reserve({**ask, "during": {"start": "2030-01-01T00:00Z", "end": "2030-01-02T00:00Z"}})
    [allocation] = services.allocations_of(later.reservation)
    drain(allocation["nodeId"], reason="fan")
    after = scrape(as_operator)
    assert delta(before, after, "berth_repairs_total", kind="drain", outcome="moved") == 1
    assert delta(before, after, "berth_repairs_total", kind="repair", outcome="moved") == 0


def test_a_repair_that_takes_spot_work_back_counts_the_preemption(as_operator, lab, tenant, other_tenant):
    """node-a holds acme's regular 4 GPUs, node-b globex's spot 4: node-a in maintenance preempts them."""
    regular = services.reserve(body(4)).reservation
    [allocation] = services.allocations_of(regular)
    spot = services.reserve(body(4, tenant="globex", priority="spot")).reservation
    before = scrape(as_operator)
    nodes.set_maintenance(allocation["nodeId"], True)
    after = scrape(as_operator)
    spot.refresh_from_db()
    assert spot.status == "preempted"
    assert delta(before, after, "berth_preemptions_total", placer="repair") == 1
