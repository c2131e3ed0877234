"""The pool rules' registry (capacity.rules): points, order, and a pool that sets no rule runs none."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest

from capacity import rules
from capacity.rules import AT_COMMIT, BEFORE_LOCK, PLACED, Booking, Rule


@dataclass(frozen=True)
class FakePool:
    """A pool as a rule's `applies` reads it: only `limits`."""

    limits: object = None


@pytest.fixture
def registry(monkeypatch):
    """An empty registry for the test; the app's rules come back after it."""
    monkeypatch.setattr(rules, "_AT", {point: () for point in rules.POINTS})
    return rules


def _booking(pool) -> Booking:
    return Booking(1, 2, "acme", pool, None, datetime(2026, 1, 1, tzinfo=UTC))


def test_a_pool_that_sets_no_rule_runs_no_rule_code(registry):
    ran = []
    registry.register_rule(
        Rule("sets", applies=lambda pool: pool.limits is not None, placed=lambda b: ran.append("placed"))
    )
    assert registry.placed(_booking(FakePool())) is None
    assert ran == []
    registry.placed(_booking(FakePool(limits=object())))
    assert ran == ["placed"]


def test_rules_run_in_the_order_registered_and_the_last_conditions_written_win(registry):
    ran = []
    registry.register_rule(
        Rule("a", applies=lambda p: True, placed=lambda b: ran.append("a") or [{"type": "A"}])
    )
    registry.register_rule(Rule("b", applies=lambda p: True, placed=lambda b: ran.append("b")))
    assert registry.placed(_booking(FakePool())) == [{"type": "A"}]
    assert ran == ["a", "b"]
    # Registered again under its name: replaced where it stood.
    registry.register_rule(Rule("a", applies=lambda p: True, placed=lambda b: ran.append("a2")))
    ran.clear()
    registry.placed(_booking(FakePool()))
    assert ran == ["a2", "b"]


def test_a_batch_skips_the_rules_that_need_the_quota_lock_and_such_a_pool_places_inline(registry):
    ran = []
    registry.register_rule(
        Rule("locked", applies=lambda p: True, placed=lambda b: ran.append(1), quota_lock=True)
    )
    registry.placed(_booking(FakePool()), batch=True)
    assert ran == []
    assert registry.places_inline(FakePool())


def test_a_before_lock_rule_refuses_by_raising(registry):
    def refuse(request, pool, now):
        raise ValueError("no")

    registry.register_rule(Rule("refuses", applies=lambda p: True, before_lock=refuse))
    assert [r.name for r in registry.registered()[BEFORE_LOCK]] == ["refuses"]
    with pytest.raises(ValueError):
        registry.before_lock(None, FakePool(), datetime(2026, 1, 1, tzinfo=UTC))


def test_a_rule_at_a_point_placement_does_not_call_yet_is_refused(registry):
    with pytest.raises(ValueError, match="calls no rule there yet"):
        registry.register_rule(Rule("later", applies=lambda p: True, at_commit=lambda b: None))
    assert registry.registered()[AT_COMMIT] == ()
    assert registry.registered()[PLACED] == ()


def test_the_policy_and_slurm_apps_register_their_rules_at_their_points():
    """The apps' ready() put each rule where docs/architecture.md says, in the order they run."""
    names = {point: [r.name for r in found] for point, found in rules.registered().items()}
    assert names == {
        rules.BEFORE_LOCK: ["limits.window", "keep-when-idle", "slurm.whole-nodes"],
        rules.BEFORE_CREATE: ["outside-check", "slurm.account"],
        rules.RECLAIMS: ["shares"],
        rules.SPARES: ["notice"],
        rules.NOTICE: ["notice"],
        rules.COMMITTED: ["shares"],
        rules.SPLIT: ["shares"],
        rules.PLACED: ["limits.future-gpu-hours", "approval"],
        rules.NO_ROOM: ["lending"],
        rules.AT_COMMIT: [],
        rules.AFTER_COMMIT: [],
        rules.ENDED: ["reclaim"],
        rules.REPORTED: ["reclaim.processes"],
    }


def test_the_architecture_page_lists_every_registered_rule_with_its_module():
    """Each registered rule has a row in docs/architecture.md's Pool rules table naming its module."""
    page = (Path(__file__).resolve().parent.parent / "docs" / "architecture.md").read_text()
    section = page.split("## Pool rules", 1)[1].split("\n## ", 1)[0]
    for found in rules.registered().values():
        for rule in found:
            module = next(getattr(rule, point.replace("-", "_")) for point in rule.points)
            path = module.__module__.replace(".", "/") + ".py"
            assert f"| `{rule.name}` | `{path}` |" in section, rule.name


def test_without_a_queue_every_pool_keeps_its_order_and_nothing_is_asked(monkeypatch):
    monkeypatch.setattr(rules, "_QUEUE", [])
    assert rules.queue_figures([1, 2]) == {}
    assert rules.queue_places([object()]) == {}
    assert rules.queue_text(object()) == ""


def test_the_policy_app_orders_the_queue_and_no_second_order_is_taken(monkeypatch):
    """policy.fair_queue is capacity's one queue (docs/architecture.md, Pool rules, names it)."""
    assert [(q.name, q.figures.__module__) for q in rules._QUEUE] == [("fair-queue", "policy.fair_queue")]
    monkeypatch.setattr(rules, "_QUEUE", list(rules._QUEUE))

    def never(*args):
        raise AssertionError("not asked")

    with pytest.raises(ValueError, match="ordered by fair-queue already"):
        rules.register_queue(rules.Queue("other", never, never, never, never, never))
    page = (Path(__file__).resolve().parent.parent / "docs" / "architecture.md").read_text()
    assert "`register_queue`" in page.split("## Pool rules", 1)[1].split("\n## ", 1)[0]
