"""The What-if page's SVG plots, drawn here as numbers the template puts into paths and bars."""

from __future__ import annotations

from dataclasses import dataclass

WIDTH, HEIGHT = 900, 230
LEFT, RIGHT, TOP, BOTTOM = 48, 12, 16, 36
COLORS = {"baseline": "#7a8596", "changed": "#2f5fa8"}


@dataclass
class Line:
    """One side's curve."""

    name: str
    color: str
    path: str
    dashed: bool = False


@dataclass
class Chart:
    """A line chart of free GPUs over time for the sides run."""

    lines: list[Line]
    most: float
    hours: float
    x_ticks: list[tuple[float, str]]
    y_ticks: list[tuple[float, str]]
    width: int = WIDTH
    height: int = HEIGHT
    left: int = LEFT
    plot_right: int = WIDTH - RIGHT
    plot_top: int = TOP
    plot_bottom: int = HEIGHT - BOTTOM


def _x(hour: float, hours: float) -> float:
    return round(LEFT + (WIDTH - LEFT - RIGHT) * (hour / hours if hours else 0), 1)


def _y(value: float, most: float) -> float:
    return round(HEIGHT - BOTTOM - (HEIGHT - TOP - BOTTOM) * (value / most if most else 0), 1)


def free_chart(sides: dict[str, dict], key: str = "freeGpus") -> Chart:
    """Return free GPUs (or, with `largestFreeBlock`, the largest free block) over time per side."""
    most = max((p[key] for s in sides.values() for p in s["largestFreeBlock"]), default=0) or 1
    most = max(most, max((s["gpus"] for s in sides.values()), default=1) if key == "freeGpus" else most)
    hours = (
        max((s["largestFreeBlock"][-1]["hour"] for s in sides.values() if s["largestFreeBlock"]), default=1.0)
        or 1
    )
    lines = []
    for name, side in sides.items():
        points = [(_x(p["hour"], hours), _y(p[key], most)) for p in side["largestFreeBlock"]]
        path = " ".join(f"{'M' if i == 0 else 'L'}{x},{y}" for i, (x, y) in enumerate(points))
        lines.append(Line(name, COLORS[name], path, dashed=name == "baseline"))
    step = _nice(hours / 6)
    x_ticks = [(_x(h, hours), _hours(h)) for h in _range(0, hours, step)]
    y_step = _nice(most / 4)
    y_ticks = [(_y(v, most), f"{v:g}") for v in _range(0, most, y_step)]
    return Chart(lines, most, hours, x_ticks, y_ticks)


@dataclass
class Bars:
    """The wait distribution: per bucket, a bar per side."""

    groups: list[dict]
    names: list[tuple[str, str]]
    most: int
    width: int = WIDTH
    height: int = HEIGHT
    plot_top: int = TOP
    plot_bottom: int = HEIGHT - BOTTOM
    left: int = LEFT


def wait_bars(sides: dict[str, dict]) -> Bars:
    """Return the wait histogram of each side as grouped bars."""
    buckets = [row["bucket"] for row in next(iter(sides.values()))["waitHistogram"]]
    most = max((row["requests"] for s in sides.values() for row in s["waitHistogram"]), default=0) or 1
    slot = (WIDTH - LEFT - RIGHT) / len(buckets)
    bar = slot * 0.8 / len(sides)
    groups = []
    for number, bucket in enumerate(buckets):
        x0 = LEFT + slot * number + slot * 0.1
        bars = []
        for k, (name, side) in enumerate(sides.items()):
            count = side["waitHistogram"][number]["requests"]
            top = _y(count, most)
            bars.append(
                {
                    "x": round(x0 + k * bar, 1),
                    "y": top,
                    "width": round(bar - 1, 1),
                    "height": round(HEIGHT - BOTTOM - top, 1),
                    "color": COLORS[name],
                    "title": f"{name}: {count:,} requests {bucket}",
                }
            )
        groups.append({"label": bucket, "x": round(LEFT + slot * (number + 0.5), 1), "bars": bars})
    return Bars(groups, [(n, COLORS[n]) for n in sides], most)


def _nice(raw: float) -> float:
    for step in (1, 2, 5, 10, 12, 24, 48, 100, 168, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000):
        if raw <= step:
            return step
    return raw


def _range(start: float, stop: float, step: float) -> list[float]:
    out, value = [], start
    while value <= stop + 1e-9:
        out.append(value)
        value += step
    return out


def _hours(h: float) -> str:
    return f"{h / 24:g} d" if h >= 48 and h % 24 == 0 else f"{h:g} h"
