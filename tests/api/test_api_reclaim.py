"""Lent GPUs over HTTP: the spot reservation says whose; its owner reclaims them (200), nobody else (404)."""

from prometheus_client.parser import text_string_to_metric_families

from capacity.models import Reservation
from capacity.models.reservations import IDLE


def test_spot_work_on_lent_gpus_says_whose_only_to_those_who_may_read_them(lent, as_globex, as_operator):
    owner, work = lent
    assert work["status"] == "placed"
    assert work["lentFrom"] == {"reservations": [], "others": 1}  # acme's booking is not globex's to read
    seen = as_operator.get(f"/api/v1/reservations/{work['id']}").json()
    assert seen["lentFrom"] == {"reservations": [owner], "others": 0}
    assert "lentFrom" not in as_operator.get(f"/api/v1/reservations/{owner}").json()


def reclaims(client) -> float:
    response = client.get("/metrics")
    families = text_string_to_metric_families(response.content.decode())
    return sum(
        s.value
        for f in families
        for s in f.samples
        if s.name == "berth_reclaims_total" and s.labels == {"pool": "lab-pool", "cause": "request"}
    )


def test_the_owner_reclaims_its_lent_gpus(
    lent, as_acme, as_globex, as_operator, django_capture_on_commit_callbacks
):
    owner, work = lent
    before = reclaims(as_operator)
    with django_capture_on_commit_callbacks(execute=True):
        response = as_acme.post(f"/api/v1/reservations/{owner}/reclaim")
    assert response.status_code == 200
    data = response.json()
    assert (data["reclaimed"], data["reservation"]["status"]) == (1, "placed")
    assert not any(c["type"] == IDLE for c in data["reservation"]["conditions"])
    taken = as_globex.get(f"/api/v1/reservations/{work['id']}").json()
    assert taken["status"] == "preempted"
    assert taken["conditions"][0]["reason"] == "ReclaimedByOwner"
    assert reclaims(as_operator) - before == 1


def test_reclaiming_a_booking_that_lends_nothing_answers_200_nothing_to_do(lent, as_globex):
    _owner, work = lent
    response = as_globex.post(f"/api/v1/reservations/{work['id']}/reclaim")
    assert response.status_code == 200
    assert (response.json()["reclaimed"], response.json()["detail"]) == (0, "nothing to do")


def test_a_tenant_reclaiming_another_tenants_booking_is_404(lent, as_globex):
    owner, work = lent
    assert as_globex.post(f"/api/v1/reservations/{owner}/reclaim").status_code == 404
    assert Reservation.objects.get(pk=work["id"]).status == "placed"
