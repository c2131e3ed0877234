"""What if, under each pool (operators): the form, the runs kept, a run's result, two runs compared."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_GET, require_http_methods

from capacity.port import CapacityError, visible_pool
from config.errors import THROTTLED
from config.web import operator_required, page

from . import runs as whatif_runs
from .charts import free_chart, wait_bars
from .forms import WhatIfForm
from .models import WhatIfRun
from .shares import spec_text
from .simulation import FIGURES

RUNS_SHOWN = 50


@require_http_methods(["GET", "POST"])
@operator_required
def whatif(request: HttpRequest, slug: str) -> HttpResponse:
    """Show the form and the pool's past runs; a valid POST queues a run and goes to it."""
    pool = visible_pool(request.user, slug)
    form = WhatIfForm(request.POST or None, pool=pool.slug)
    throttled = False
    if request.method == "POST":
        inputs = form.inputs()
        if inputs is not None:
            try:
                run = whatif_runs.queue(inputs, request.user)
            except CapacityError as err:
                form.refuse(err)
                throttled = err.code == THROTTLED
            else:
                return redirect("whatif-run", slug=pool.slug, pk=run.pk)
    runs = WhatIfRun.objects.filter(pool=pool).select_related("created_by").order_by("-created_at", "-id")
    context = {
        "nav": "pools",
        "pool": pool,
        "form": form,
        "runs": runs[:RUNS_SHOWN],
        "caps": (whatif_runs.MAX_WAITING_PER_USER, whatif_runs.MAX_WAITING_PER_POOL),
    }
    status = 429 if throttled else 400 if form.errors else 200
    return page(request, "whatif/index.html", context, status=status)


@require_GET
@operator_required
def whatif_run(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    """Show one run: its inputs, its progress while it runs (htmx polls), then both sides and the plots."""
    pool = visible_pool(request.user, slug)
    run = get_object_or_404(WhatIfRun.objects.select_related("created_by"), pk=pk, pool=pool)
    return page(request, "whatif/run.html", {"nav": "pools", "pool": pool, **_shown(run)}, partial="run")


@require_GET
@operator_required
def whatif_compare(request: HttpRequest, slug: str) -> HttpResponse:
    """Compare two finished runs of the pool: each run's changed side (its baseline if none)."""
    pool = visible_pool(request.user, slug)
    chosen = [v for v in request.GET.getlist("run") if v.isascii() and v.isdigit()][:2]
    runs = list(
        WhatIfRun.objects.filter(pool=pool, pk__in=chosen, status=WhatIfRun.Status.DONE).order_by("pk")
    )
    context = {"nav": "pools", "pool": pool, "runs": runs}
    if len(runs) == 2:
        sides = {f"#{r.pk}": r.result["changed"] or r.result["baseline"] for r in runs}
        chart = free_chart(dict(zip(("baseline", "changed"), sides.values(), strict=True)))
        for line, name in zip(chart.lines, sides, strict=True):
            line.name = name  # drawn as a baseline (dashed) and a changed side, named for its run
        context.update(
            figures=[(label, [s.get(key, "") for s in sides.values()]) for key, label in FIGURES],
            names=list(sides),
            chart=chart,
        )
    return page(request, "whatif/compare.html", context, status=200 if len(runs) == 2 else 400)


def _shown(run: WhatIfRun) -> dict:
    """Return what the run page shows of a run: progress, or the figures and plots."""
    context: dict = {
        "run": run,
        "inputs": _inputs_text(run.inputs),
        "finished": run.status in ("done", "failed"),
    }
    if run.status == WhatIfRun.Status.DONE:
        # The result is kept as jsonb, which orders keys its own way: the baseline comes first here.
        sides = {name: run.result[name] for name in ("baseline", "changed") if run.result.get(name)}
        context.update(
            # Runs kept from before both sides counted bookable nodes only have neither list.
            left_out=run.result.get("leftOut", []),
            restored=run.result.get("restored", []),
            names=list(sides),
            # Runs kept from before a figure was added show it empty.
            figures=[(label, [side.get(key, "") for side in sides.values()]) for key, label in FIGURES],
            shares=[(name, side.get("shares") or []) for name, side in sides.items()],
            free=free_chart(sides),
            blocks=free_chart(sides, key="largestFreeBlock"),
            waits=wait_bars(sides),
            tenants=_tenants(sides),
        )
    return context


def _tenants(sides: dict[str, dict]) -> list[dict]:
    """Return a row per tenant with each side's figures."""
    names = sorted({row["tenant"] for side in sides.values() for row in side["tenants"]})
    by = {name: {row["tenant"]: row for row in side["tenants"]} for name, side in sides.items()}
    return [{"tenant": t, "sides": [(name, by[name].get(t)) for name in sides]} for t in names]


def _inputs_text(data: dict) -> list[tuple[str, str]]:
    """Return a run's inputs as label, text pairs."""
    rows = []
    s = data["synthetic"]
    if s is not None:
        mix = ", ".join(f"{n}:{w:g}" for n, w in s["mix"])
        rows.append(
            (
                "Demand",
                f"{s['count']:,} synthetic requests, seed {data['seed']}, {s['perHour']:g}/h, sizes {mix}, "
                f"gangs {s['gangShare']:g}, mean {s['meanHours']:g} h, spot {s['spotShare']:g}",
            )
        )
    else:
        rows.append(("Demand", f"reservations created from {data['since'][:10]} to {data['until'][:10]}"))
    changes = []
    changes += [f"add {n} × {shape}" for shape, n in data["add"]]
    changes += [f"take out {r}" for r in data["remove"]]
    changes += [f"bring back {r}" for r in data.get("restore", ())]
    if data["weights"]:
        changes.append("weights " + ", ".join(f"{k}={v:g}" for k, v in data["weights"].items()))
    if data["topN"] is not None:
        changes.append(f"top N {data['topN']}")
    if data["placer"]:
        changes.append(f"placer {data['placer']}")
    if data.get("shares"):
        changes.append("shares " + ", ".join(spec_text(tuple(spec)) for spec in data["shares"]))
    rows.append(("Changes", "; ".join(changes) or "none (the baseline alone)"))
    rows.append(("Longest wait", f"{data['horizonDays']} days"))
    return rows
