"""The kept free index answers as the full earliest-start search does, over random books (no database)."""

from __future__ import annotations

import random

from capacity.placement.earliest import Counts, NodeTime, Shape, earliest_start
from capacity.placement.freeindex import FreeIndex, profile

H = 3_600_000
Q = H // 4  # bookings and starts on quarter hours, so ends and starts often meet


def _node(rng: random.Random, name: str) -> dict:
    """A node as plain data: atoms per class, bookings per device (one device is no atom: unhealthy)."""
    atoms = {"gpu": list(range(rng.randint(1, 8)))}
    if rng.random() < 0.3:
        atoms["mig"] = [100 + i for i in range(rng.randint(1, 4))]
    return {"atoms": atoms, "busy": {}, "group": rng.choice(("a", "b", None))}


def _time(node: dict) -> NodeTime:
    busy = {pk: sorted(spans) for pk, spans in node["busy"].items() if spans}
    return NodeTime(node["atoms"], busy, {}, {}, node["group"])


def _devices(node: dict) -> list[int]:
    return [pk for atoms in node["atoms"].values() for pk in atoms] + [999]


def _change(rng: random.Random, node: dict) -> None:
    """Book a device, cut a booking short or drop one, as a what-if book does."""
    pk = rng.choice(_devices(node))
    spans = node["busy"].setdefault(pk, [])
    roll = rng.random()
    if spans and roll < 0.2:
        spans.remove(rng.choice(spans))
    elif spans and roll < 0.35:
        s, e = spans.pop(rng.randrange(len(spans)))
        spans.append((s, max(s, e - rng.randint(1, 8) * Q)))  # cut to nothing at times, as a preemption
    else:
        s = rng.randint(0, 96) * Q
        spans.append((s, s + rng.randint(1, 48) * Q))


def _shape(rng: random.Random) -> Shape:
    need = {"gpu": rng.choice((1, 1, 2, 4, 8))}
    if rng.random() < 0.15:
        need = {"mig": rng.randint(1, 3)} if rng.random() < 0.5 else {**need, "mig": 1}
    if rng.random() < 0.05:
        need["gpu"] = 0  # a class asked for none of
    gang = rng.choice((2, 3)) if rng.random() < 0.2 else None
    return Shape(need, {}, rng.randint(1, 40) * Q, gang_size=gang)


def _fits(rng: random.Random):
    """A planner that refuses some windows (the same ones each time it is asked) and records the questions."""
    salt = rng.random()
    asked: list[tuple[int, tuple[str, ...]]] = []

    def fits(at: int, names) -> object | None:
        asked.append((at, tuple(names)))
        return None if random.Random(f"{salt}{at}{names}").random() < 0.3 else object()

    return fits, asked


def _search(search, shape: Shape, times: dict[str, NodeTime], start: int, latest: int, rng_state: int):
    fits, asked = _fits(random.Random(rng_state))
    return search(shape, times, start, latest, fits), asked


def test_the_kept_index_answers_and_asks_as_the_full_search_over_random_books() -> None:
    rng = random.Random(49)
    compared = waited = 0
    for _case in range(60):
        nodes = {f"n{i:02}": _node(rng, f"n{i:02}") for i in range(rng.randint(1, 7))}
        kept = FreeIndex()
        for name, node in nodes.items():
            kept.update(name, _time(node))
        for _step in range(40):
            name = rng.choice(sorted(nodes))
            _change(rng, nodes[name])
            kept.update(name, _time(nodes[name]))  # only the node that changed is read again
            times = {n: _time(node) for n, node in nodes.items()}
            rebuilt = FreeIndex()
            for n, t in times.items():
                rebuilt.update(n, t)
            for _query in range(3):
                shape = _shape(rng)
                some = {n: t for n, t in times.items() if rng.random() < 0.85}  # the viable nodes
                start = rng.randint(0, 100) * Q + rng.choice((0, 0, 1))
                latest = start + rng.randint(0, 120) * Q
                state = rng.randrange(1 << 30)
                full = _search(earliest_start, shape, some, start, latest, state)
                assert _search(kept.earliest, shape, some, start, latest, state) == full
                assert _search(rebuilt.earliest, shape, some, start, latest, state) == full
                compared += 1
                waited += full[0] is not None and full[0][0] > start
    assert compared == 60 * 40 * 3 and waited > 500  # most answers lie past the requested start


def test_a_node_read_before_its_ended_bookings_were_dropped_answers_as_one_read_after() -> None:
    """What if reads a swept node again only for a search starting before the sweep."""
    rng = random.Random(7)
    for _case in range(300):
        node = _node(rng, "n")
        for _ in range(rng.randint(1, 12)):
            _change(rng, node)
        now = rng.randint(0, 100) * Q
        swept = {
            **node,
            "busy": {pk: [(s, e) for s, e in spans if e > now] for pk, spans in node["busy"].items()},
        }
        before, after = FreeIndex(), FreeIndex()
        before.update("n", _time(node))
        after.update("n", _time(swept))
        for _query in range(5):
            shape = _shape(rng)
            start = now + rng.randint(0, 40) * Q
            latest = start + rng.randint(0, 120) * Q
            state = rng.randrange(1 << 30)
            one = {"n": _time(swept)}
            assert _search(before.earliest, shape, one, start, latest, state) == _search(
                after.earliest, shape, one, start, latest, state
            )


def test_a_profile_counts_free_atoms_as_counts_does_for_every_length() -> None:
    rng = random.Random(3)
    for _case in range(300):
        node = _node(rng, "n")
        for _ in range(rng.randint(0, 15)):
            _change(rng, node)
        timeline = _time(node)
        kept = profile(timeline)
        for _query in range(10):
            duration = rng.randint(1, 40) * Q
            counts = Counts(timeline, duration)
            at = rng.randint(-4, 120) * Q + rng.choice((0, 0, -1, 1))
            for device_class in timeline.atoms:
                free = counts.free(device_class, at)
                for count in range(1, 9):
                    assert (kept.until({device_class: count}, duration, at) is not None) == (free >= count)


def test_leases_and_scalar_claims_go_to_the_full_search() -> None:
    busy = NodeTime({"gpu": [0, 1]}, {0: [(0, 2 * H)]}, {"nic": 2}, {"nic": [(0, 3 * H, 1)]})
    nodes = {"a": busy, "b": NodeTime({"gpu": [5]}, {5: [(H, 4 * H)]}, {}, {})}
    kept = FreeIndex()
    for name, timeline in nodes.items():
        kept.update(name, timeline)
    for shape in (Shape({"gpu": 1}, {"nic": 2}, H), Shape({}, {}, H, whole_node=True)):
        full = _search(earliest_start, shape, nodes, 0, 10 * H, 1)
        assert full[0] is not None
        assert _search(kept.earliest, shape, nodes, 0, 10 * H, 1) == full
