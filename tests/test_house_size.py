"""The house stays the size people can read: capacity holds booking and placement, modules stay small.

Counted from the source as `find capacity -name '*.py' -not -path '*/migrations/*' | xargs wc -l`
counts it: migrations and tests aside. A feature on top of booking is an app of its own (policy,
series, maintenance, agents, usage, ...: docs/architecture.md), so capacity does not grow with it.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAX_LINES = 450  # a module's most lines
AGENT = ROOT / "agent" / "berth_agent.py"
MAX_AGENT_LINES = 600  # the agent stays one file a node can copy
CAPACITY_MODULES, CAPACITY_LINES = 150, 20_000


def _modules(under: Path) -> list[Path]:
    return [
        path
        for path in under.rglob("*.py")
        if "migrations" not in path.parts and ".venv" not in path.parts and "tests" not in path.parts
    ]


def _lines(path: Path) -> int:
    return len(path.read_text().splitlines())


def test_capacity_keeps_booking_and_placement_within_its_size() -> None:
    modules = _modules(ROOT / "capacity")
    lines = sum(_lines(path) for path in modules)
    assert len(modules) <= CAPACITY_MODULES, f"capacity has {len(modules)} modules"
    assert lines <= CAPACITY_LINES, f"capacity has {lines} lines"


def test_no_module_is_over_its_lines() -> None:
    apps = [p for p in ROOT.iterdir() if (p / "__init__.py").exists() and p.name != "tests"]
    long = sorted(
        f"{path.relative_to(ROOT)}: {_lines(path)}"
        for app in apps
        for path in _modules(app)
        if path != AGENT and _lines(path) > MAX_LINES
    )
    assert long == []
    assert _lines(AGENT) <= MAX_AGENT_LINES
