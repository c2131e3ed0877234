"""The next two weeks of free capacity as an SVG chart: one panel per device class, one for NVLink blocks.

Drawn on the server: each panel's bars are runs of hours with the same value, each with a hover
title naming its hours and its count, so the page stays small and needs no script.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

from capacity import services
from capacity.placement import CapacityError
from capacity.placement.availability import HOUR_MS, Availability
from capacity.services.pool_availability import pool_availability

# Geometry in SVG units (pixels at 100 %): three per hour keeps 14 days within a laptop page's width.
PER_HOUR = 3
LEFT, RIGHT, TOP = 44, 28, 4
PANEL, HEADING, BOTTOM = 46, 20, 30
NVLINK_TITLE = "largest free NVLink block"


@dataclass
class Bar:
    """A run of hours with one value: its box in the plot and what hovering it says."""

    x: float
    width: float
    y: float
    height: float
    title: str


@dataclass
class Panel:
    """One series: free atoms of a class, or the largest free NVLink block, per hour."""

    title: str
    unit: str
    top: int  # y of the heading; the plot follows it
    most: int  # the value at the top of the plot
    bars: list[Bar]
    least: int
    least_at: str
    path: str = ""  # the bars' outline as one step-shaped area: no seams between runs

    @property
    def plot_top(self) -> int:
        return self.top + HEADING

    @property
    def plot_bottom(self) -> int:
        return self.top + HEADING + PANEL


@dataclass
class WindowMark:
    """A maintenance window drawn across the panels: its span in the plot and what hovering says."""

    x: float
    width: float
    title: str


@dataclass
class Chart:
    """A pool's availability chart: panels, day ticks and what the whole figure says in words."""

    pool: str
    width: int
    height: int
    panels: list[Panel]
    ticks: list[float]  # x of each midnight UTC
    days: list[tuple[float, str]]  # (x, label) at noon of each day whose noon is drawn
    start: datetime
    end: datetime
    no_nvlink: bool
    left: int = LEFT
    right_edge: int = 0
    panel_height: int = PANEL
    summary: list[str] = field(default_factory=list)
    windows: list[WindowMark] = field(default_factory=list)  # drawn over every panel's plot

    @property
    def plot_width(self) -> int:
        return self.right_edge - self.left


def _at(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


def _when(ms: int) -> str:
    return f"{_at(ms):%a %b %d %H:%M}"


def build_chart(pool: str, found: Availability) -> Chart:
    """Return the chart of one pool's availability: whole GPUs first, then MIG classes, then NVLink."""
    start, end = found.starts[0], found.end
    hours = len(found.starts)
    edges = [*found.starts, end]

    def x(ms: int) -> float:
        return round(LEFT + (ms - start) * PER_HOUR / HOUR_MS, 2)

    series = [
        (cls, f"{cls} free", "free", found.totals[cls], found.free[cls])
        for cls in sorted(found.free, key=lambda c: (c != "gpu", c))
    ]
    if found.nvlink is not None:
        series.append(
            ("nvlink", NVLINK_TITLE, "GPUs on one node, all NVLink", found.nvlink_most, found.nvlink)
        )
    panels = []
    top = TOP
    for _key, title, unit, most, values in series:
        bars = []
        i = 0
        while i < hours:
            j = i
            while j + 1 < hours and values[j + 1] == values[i]:
                j += 1
            height = round(PANEL * values[i] / most, 2) if most else 0
            lo, hi = edges[i], edges[j + 1]
            if unit == "free":
                said = f"{values[i]} of {most} {title}"
            else:
                said = f"largest free NVLink block: {values[i]} GPUs"
            bars.append(
                Bar(
                    x(lo),
                    round(x(hi) - x(lo), 2),
                    top + HEADING + PANEL - height,
                    height,
                    f"{_when(lo)} – {_when(hi)} UTC: {said}",
                )
            )
            i = j + 1
        least = min(values)
        panel = Panel(title, unit, top, most, bars, least, _when(edges[values.index(least)]))
        panel.path = _step_path(bars, panel.plot_bottom)
        panels.append(panel)
        top += HEADING + PANEL + 8
    day = 24 * HOUR_MS
    ticks = [x(t) for t in range((start // day + 1) * day, end, day)]
    # The window starts now and ends on the hour, so it spans a little under 14 days: counting a
    # noon at `end` and not one at `start` labels 14 days whatever the hour (12:30 too).
    days = [
        (x(t + day // 2), f"{_at(t):%a %d}")
        for t in range(start // day * day, end, day)
        if start < t + day // 2 <= end
    ]
    width = int(x(end)) + RIGHT
    chart = Chart(
        pool,
        width,
        top + BOTTOM,
        panels,
        ticks,
        days,
        _at(start),
        _at(end),
        found.nvlink is None,
        right_edge=int(x(end)),
    )
    chart.summary = [f"{p.title}: at least {p.least} of {p.most}, first at {p.least_at} UTC" for p in panels]
    for span, nodes in found.windows:
        lo, hi = max(span.start, start), min(span.end, end)
        named = ", ".join(nodes[:3]) + (f" and {len(nodes) - 3} more" if len(nodes) > 3 else "")
        said = f"maintenance window {span.id} on {named}, {_when(span.start)} – {_when(span.end)} UTC"
        title = f"{said}: {span.reason}" if span.reason else said
        chart.windows.append(WindowMark(x(lo), round(x(hi) - x(lo), 2), title))
        chart.summary.append(title)
    return chart


def _step_path(bars: list[Bar], bottom: int) -> str:
    """Return an SVG path outlining the bars: up and along each run's top, then down to close."""
    if not bars:
        return ""
    steps = [f"M{bars[0].x} {bottom}"]
    for bar in bars:
        steps.append(f"L{bar.x} {bar.y}L{round(bar.x + bar.width, 2)} {bar.y}")
    steps.append(f"L{round(bars[-1].x + bars[-1].width, 2)} {bottom}Z")
    return "".join(steps)


def pool_charts(pools, scope: services.Scope) -> list[Chart]:
    """Return the availability chart of each pool the caller may book, in the order given."""
    charts = []
    for pool in pools:
        slug = getattr(pool, "slug", pool)
        try:
            charts.append(build_chart(slug, pool_availability(slug, scope=scope)))
        except CapacityError:
            continue  # a pool this caller may not book draws nothing
    return charts
