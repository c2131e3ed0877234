"""Checks other apps add to `check_capacity`: what they could not do, and drift they recount.

An app registers a check in its AppConfig.ready() (the Slurm bridge reports the pools it is behind
on and what its last pass could not do); capacity knows no app that does. Each returns one line per
problem, as capacity.audit does; the test suite's audit after every test runs none of them.
A recount registered as drift (usage's booked hours) is part of capacity.audit itself: read in the
audit's one snapshot, its lines are drift, and the suite's audit after every test runs it.
"""

from __future__ import annotations

from collections.abc import Callable

CHECKS: dict[str, Callable[[], list[str]]] = {}
DRIFTS: dict[str, Callable[[], list[str]]] = {}


def register_check(name: str, check: Callable[[], list[str]]) -> None:
    """Add a check under its app's name (once per name: ready() may run twice in tests)."""
    CHECKS[name] = check


def other_problems() -> list[str]:
    """Return every registered check's lines, each led by its app's name."""
    return [f"{name}: {line}" for name, check in CHECKS.items() for line in check()]


def register_drift(name: str, recount: Callable[[], list[str]]) -> None:
    """Add a recount to capacity's audit under its app's name (once per name)."""
    DRIFTS[name] = recount


def other_drift() -> list[str]:
    """Return every registered recount's drift lines, as they word them."""
    return [line for recount in DRIFTS.values() for line in recount()]
