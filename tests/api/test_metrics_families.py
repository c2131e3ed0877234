"""`/metrics` families: what each counter counts (a request once, its retries apart) and the docs table
listing every family the endpoint emits; promtool's lint where promtool is installed."""

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from prometheus_client.metrics import MetricWrapperBase
from prometheus_client.parser import text_string_to_metric_families
from test_metrics import body, delta, scrape

from capacity import services
from capacity.port import BUCKETS
from inventory.models import Pool
from metrics import events
from slurm import metrics as slurm_metrics

pytestmark = pytest.mark.django_db(transaction=True)

OPERATIONS = Path(__file__).resolve().parents[2] / "docs" / "operations.md"
# Names promtool's lint may flag: kept one release after their rename (docs/operations.md says so).
DEPRECATED = {"berth_gpu_hours_lent_total"}


def exposed_name(name: str, kind: str) -> str:
    """Return a family's name as a scrape shows it: a counter's with `_total`."""
    return f"{name}_total" if kind == "counter" and not name.endswith("_total") else name


def emitted(as_operator) -> tuple[str, set[str]]:
    """Return the scrape's text and the names of its families."""
    response = as_operator.get("/metrics")
    assert response.status_code == 200
    text = response.content.decode()
    return text, {exposed_name(f.name, f.type) for f in text_string_to_metric_families(text)}


def declared() -> set[str]:
    """Return every event metric metrics.events and the Slurm bridge define, counted yet or not."""
    return {
        exposed_name(m.name, m.type)
        for module in (events, slurm_metrics)
        for value in vars(module).values()
        if isinstance(value, MetricWrapperBase)
        for m in value.describe()
    }


def documented() -> set[str]:
    """Return the metric names the tables of docs/operations.md's Metrics section list."""
    section = OPERATIONS.read_text().split("\n## Metrics\n", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^\| `(berth_\w+)`", section, flags=re.M))


def later(gpus, tenant="acme"):
    """Return a request for `gpus` GPUs on a day in 2030: room a release frees is room for its whole window."""
    ask = {k: v for k, v in body(gpus, tenant=tenant).items() if k != "duration"}
    return {**ask, "during": {"start": "2030-01-01T00:00Z", "end": "2030-01-02T00:00Z"}}


def test_a_request_counts_once_and_each_retry_of_a_pending_booking_apart(
    as_operator, lab, tenant, other_tenant
):
    """globex fills both 4-GPU nodes; acme's 2 GPUs go pending, are retried in vain, then placed."""
    fillers = [services.reserve(later(4, tenant="globex")).reservation for _ in range(2)]
    before = scrape(as_operator)
    pending = services.reserve(later(2)).reservation
    assert pending.status == "pending"
    pool = Pool.objects.get(slug="lab-pool").pk
    assert services.retry_pending([pool]) == 0
    assert services.retry_pending([pool]) == 0
    mid = scrape(as_operator)
    placements, retries = "berth_placements_total", "berth_placement_retries_total"
    assert delta(before, mid, placements, placer="inline", outcome="pending") == 1
    assert delta(before, mid, retries, placer="inline", outcome="pending") == 2
    services.release(fillers[0].pk)  # retries the pool's pending work: acme's booking places
    pending.refresh_from_db()
    assert pending.status == "placed"
    after = scrape(as_operator)
    assert delta(mid, after, retries, placer="inline", outcome="placed") == 1
    assert delta(before, after, placements, placer="inline", outcome="placed") == 0
    assert delta(before, after, placements, placer="inline", outcome="pending") == 1


def test_the_docs_table_lists_every_family_the_endpoint_emits_and_no_other(as_operator, lab, tenant):
    services.reserve(body(2))  # a placement: the event families have samples to show
    _text, live = emitted(as_operator)
    assert {"berth_placements_total", "berth_capacity_atoms", "berth_unbooked_use_devices"} <= live
    families = live | declared()
    assert sorted(families - documented()) == [], "add these to docs/operations.md's metrics tables"
    assert sorted(documented() - families) == [], "docs/operations.md lists metrics the endpoint never emits"
    # Label values the table once missed: the cordoned bucket, the maintenance window's repairs.
    rows = {
        line.split("`")[1]: line
        for line in OPERATIONS.read_text().splitlines()
        if line.startswith("| `berth_")
    }
    assert [b for b in BUCKETS if f"`{b}`" not in rows["berth_capacity_atoms"]] == []
    assert [k for k in ("repair", "drain", "maintenance") if k not in rows["berth_repairs_total"]] == []


def described(families: set[str]) -> str:
    """Return HELP and TYPE lines of the event metrics not among `families` (none counted yet)."""
    lines = []
    for value in vars(events).values():
        if isinstance(value, MetricWrapperBase):
            for m in value.describe():
                name = exposed_name(m.name, m.type)
                if name not in families:
                    lines += [f"# HELP {name} {m.documentation}", f"# TYPE {name} {m.type}"]
    return "".join(f"{line}\n" for line in lines)


@pytest.mark.skipif(
    shutil.which("promtool") is None, reason="promtool (Debian's prometheus package) not installed"
)
def test_promtool_finds_nothing_to_lint_but_the_deprecated_name(
    lent, as_acme, as_operator, django_capture_on_commit_callbacks
):
    """Lent work taken back counts its GPU-hours under both names; every family is linted."""
    owner, _work = lent
    with django_capture_on_commit_callbacks(execute=True):
        assert as_acme.post(f"/api/v1/reservations/{owner}/reclaim").status_code == 200
    text, live = emitted(as_operator)
    assert {"berth_lent_gpu_seconds_total", "berth_gpu_hours_lent_total"} <= live
    checked = subprocess.run(
        ["promtool", "check", "metrics"],
        input=text + described(live),
        capture_output=True,
        text=True,
        timeout=30,
    )
    problems = [line for line in (checked.stdout + checked.stderr).splitlines() if line.strip()]
    assert [p for p in problems if p.split(" ", 1)[0] not in DEPRECATED] == [], problems
    assert any(p.startswith("berth_gpu_hours_lent_total ") for p in problems)  # the lint issue 58 saw
