"""The What-if page under each pool: operators queue runs, the worker runs them, the page shows and compares them."""

import pytest

from capacity import worker_jobs
from whatif import runs as whatif_runs
from whatif.models import WhatIfRun

from web_helpers import HX, error_next_to, is_full_page

pytestmark = pytest.mark.django_db

FORM = {
    "demand": "synthetic",
    "requests": "120",
    "seed": "3",
    "rate": "20",
    "mix": "1:40,2:25,4:20,8:15",
    "gang_share": "0.05",
    "mean_hours": "6",
    "spot_share": "0.1",
    "horizon_days": "14",
    "add_nodes": "node-a=2",
    "remove_nodes": "",
    "weights": "",
    "placer": "",
}


@pytest.fixture
def hosts(make_node):
    """lab-pool: node-a, node-b, each [gpu0..gpu3] NVLinked."""
    return [make_node(name, gpus=4) for name in ("node-a", "node-b")]


def test_only_operators_reach_the_page(op, alice, hosts):
    assert op.get("/pools/lab-pool/whatif/").status_code == 200
    assert alice.get("/pools/lab-pool/whatif/").status_code == 403
    assert alice.post("/pools/lab-pool/whatif/", FORM).status_code == 403
    assert not WhatIfRun.objects.exists()


def test_a_run_is_queued_run_by_the_worker_and_shown_side_by_side(op, operator, hosts):
    answer = op.post("/pools/lab-pool/whatif/", FORM)
    run = WhatIfRun.objects.get()
    assert answer.status_code == 302 and answer["Location"] == f"/pools/lab-pool/whatif/{run.pk}/"
    assert (run.status, run.created_by, run.inputs["add"]) == ("queued", operator, [["node-a", 2]])
    waiting = op.get(f"/pools/lab-pool/whatif/{run.pk}/").content.decode()
    assert "Waiting for the worker" in waiting and 'hx-trigger="every 1s"' in waiting

    assert worker_jobs.JOBS["whatif"].run_once() == f"what-if #{run.pk} done"
    run.refresh_from_db()
    assert (run.status, run.progress) == ("done", 100)
    assert run.result["baseline"]["requests"] == run.result["changed"]["requests"] == 120
    assert run.result["changed"]["nodes"] == 4

    page = op.get(f"/pools/lab-pool/whatif/{run.pk}/").content.decode()
    assert "Side by side" in page and "every 1s" not in page
    assert page.count("<svg") == 3  # free GPUs, the largest free block, the waits
    assert "add 2 × node-a" in page
    partial = op.get(f"/pools/lab-pool/whatif/{run.pk}/", **HX)
    assert not is_full_page(partial.content.decode()) and "Side by side" in partial.content.decode()
    assert "HX-Request" in partial["Vary"]
    listed = op.get("/pools/lab-pool/whatif/").content.decode()
    assert f'href="/pools/lab-pool/whatif/{run.pk}/"' in listed


def test_a_refused_input_shows_next_to_its_field_and_queues_nothing(op, hosts):
    answer = op.post("/pools/lab-pool/whatif/", {**FORM, "add_nodes": "node-z=3"})
    assert answer.status_code == 400
    assert (
        error_next_to(answer.content.decode(), "add_nodes")
        == "no node &#x27;node-z&#x27; in the pool to copy"
    )
    answer = op.post("/pools/lab-pool/whatif/", {**FORM, "weights": "speed=2"})
    assert "no scorer &#x27;speed&#x27;" in error_next_to(answer.content.decode(), "weights")
    answer = op.post("/pools/lab-pool/whatif/", {**FORM, "requests": "1000001"})
    assert error_next_to(answer.content.decode(), "requests") == "from 1 to 100,000 requests, not 1,000,001"
    answer = op.post(
        "/pools/lab-pool/whatif/",
        {**FORM, "demand": "recorded", "since": "2020-01-01", "until": "2020-02-01"},
    )
    assert "no reservation was created" in error_next_to(answer.content.decode(), "since")
    assert not WhatIfRun.objects.exists()


def test_two_finished_runs_are_compared(op, hosts):
    for add in ("node-a=1", "node-b=3"):
        op.post("/pools/lab-pool/whatif/", {**FORM, "add_nodes": add})
        whatif_runs.run_once()
    first, second = WhatIfRun.objects.order_by("pk")
    page = op.get(f"/pools/lab-pool/whatif/compare/?run={first.pk}&run={second.pk}")
    assert page.status_code == 200
    text = page.content.decode()
    assert f">#{first.pk}<" in text and f">#{second.pk}<" in text and "<svg" in text
    assert op.get(f"/pools/lab-pool/whatif/compare/?run={first.pk}").status_code == 400


def test_a_run_the_worker_died_in_is_taken_up_again_once_stale(op, hosts):
    op.post("/pools/lab-pool/whatif/", FORM)
    run = WhatIfRun.objects.get()
    from django.utils import timezone

    WhatIfRun.objects.filter(pk=run.pk).update(status="running", started_at=timezone.now())
    assert whatif_runs.run_once() == ""  # another worker's, and alive
    WhatIfRun.objects.filter(pk=run.pk).update(started_at=timezone.now() - whatif_runs.STALE_AFTER * 2)
    assert whatif_runs.run_once() == f"what-if #{run.pk} done"


def test_a_person_may_have_three_runs_waiting_and_the_fourth_is_refused_with_429(op, hosts):
    for _ in range(whatif_runs.MAX_WAITING_PER_USER):
        assert op.post("/pools/lab-pool/whatif/", FORM).status_code == 302
    answer = op.post("/pools/lab-pool/whatif/", FORM)
    assert answer.status_code == 429
    assert (
        "You have 3 what-if runs queued or running, the most one person may have (3): wait for one to finish."
        in answer.content.decode()
    )
    assert WhatIfRun.objects.count() == 3
    whatif_runs.run_once()  # one finishes: a place frees
    assert op.post("/pools/lab-pool/whatif/", FORM).status_code == 302


def test_a_pool_may_have_five_runs_waiting_whoever_asked(operators_group, hosts):
    from django.contrib.auth.models import User
    from django.test import Client

    clients = []
    for name in ("ann", "ben", "cai"):
        user = User.objects.create_user(name)
        user.groups.add(operators_group)
        client = Client()
        client.force_login(user)
        clients.append(client)
    statuses = [c.post("/pools/lab-pool/whatif/", FORM).status_code for c in clients for _ in range(2)]
    assert statuses == [302] * 5 + [429]
    answer = clients[0].post("/pools/lab-pool/whatif/", FORM)
    assert answer.status_code == 429
    assert (
        "lab-pool has 5 what-if runs queued or running, the most a pool may have (5)"
        in answer.content.decode()
    )
    assert WhatIfRun.objects.count() == 5


def test_bring_back_nodes_on_the_page_restores_them_on_the_changed_side(op, hosts):
    from inventory.services import cordon

    cordon("node-b")
    answer = op.post("/pools/lab-pool/whatif/", {**FORM, "restore_nodes": "node-a"})
    assert answer.status_code == 400
    assert "&#x27;node-a&#x27; may be booked already" in error_next_to(
        answer.content.decode(), "restore_nodes"
    )
    op.post("/pools/lab-pool/whatif/", {**FORM, "add_nodes": "", "restore_nodes": "node-b"})
    run = WhatIfRun.objects.get()
    whatif_runs.run_once()
    run.refresh_from_db()
    assert (run.result["baseline"]["gpus"], run.result["changed"]["gpus"]) == (4, 8)
    page = op.get(f"/pools/lab-pool/whatif/{run.pk}/").content.decode()
    assert "bring back node-b" in page
    assert "Brought back on the changed side: <strong>node-b</strong> (was cordoned)" in page


def test_a_run_past_its_time_limit_stops_and_says_why(op, hosts, monkeypatch):
    monkeypatch.setattr(whatif_runs, "MAX_RUN_SECONDS", 0)
    op.post("/pools/lab-pool/whatif/", FORM)
    run = WhatIfRun.objects.get()
    assert whatif_runs.run_once() == f"what-if #{run.pk} stopped after 0 s"
    run.refresh_from_db()
    assert run.status == "failed" and run.error.startswith(
        "stopped after 10 minutes, the longest a run may take"
    )


def test_shares_on_the_page_run_on_the_changed_side_and_show_per_tenant(op, hosts, tenant, other_tenant):
    answer = op.post("/pools/lab-pool/whatif/", {**FORM, "shares": "acme=6, globex=2:1:0"})
    assert answer.status_code == 302
    run = WhatIfRun.objects.get()
    assert run.inputs["shares"] == [["acme", 6, None, None], ["globex", 2, 1, 0]]
    assert whatif_runs.run_once() == f"what-if #{run.pk} done"
    run.refresh_from_db()
    assert [row["tenant"] for row in run.result["changed"]["shares"]] == ["acme", "globex"]
    page = op.get(f"/pools/lab-pool/whatif/{run.pk}/").content.decode()
    assert "shares acme=6, globex=2:1:0" in page
    assert "<strong>changed</strong> acme 6, globex 2 borrowing ≤ 1 lending ≤ 0" in page
    assert "<strong>baseline</strong> none" in page
    assert "Borrowed (GPU-h)" in page and "Reclaimed" in page
    assert (
        '<td>changed</td><td class="num">6</td>' in page and '<td>baseline</td><td class="num">—</td>' in page
    )


@pytest.mark.parametrize(
    ("shares", "message"),
    [
        ("acme=x", "&#x27;acme=x&#x27;: &#x27;x&#x27; is not a whole number of GPUs, 0 or more"),
        ("acme=-2", "&#x27;acme=-2&#x27;: &#x27;-2&#x27; is not a whole number of GPUs, 0 or more"),
        ("nobody=1", "no tenant &#x27;nobody&#x27;"),
        ("acme=10, globex=10", "the guarantees add up to 20 GPUs; the changed pool has 16"),
    ],
)
def test_a_bad_share_on_the_page_shows_next_to_its_field(op, hosts, tenant, other_tenant, shares, message):
    answer = op.post("/pools/lab-pool/whatif/", {**FORM, "shares": shares})
    assert answer.status_code == 400
    assert error_next_to(answer.content.decode(), "shares") == message
    assert not WhatIfRun.objects.exists()
