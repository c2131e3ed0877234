"""The pools of a what-if run: the pool's bookable nodes, and a changed copy with nodes added, taken out
and brought back.

Nothing is written: the copies live in this process only. Both sides count only what someone may
book at the run's start, as the pool page's bookable figure does: a node no one may book now
(cordoned, in maintenance, provisioning, unreachable, NotReady, stale, tainted: the placer's own
`may_be_schedulable`) is left out of both, unless the run brings it back (`--restore-nodes`) on
the changed side. Unhealthy and unbookable devices never count (the index holds healthy, bookable
atoms only). An added node copies a node of the pool (its devices, links, labels and scalar
resources) as bought new: bookable, its devices healthy. It is named `<shape>+<n>`, with keys
above every real one, so it can never be mistaken for a row.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

from capacity.port import (
    DEDICATED_PREFIX,
    INVALID_INPUT,
    CapacityError,
    NodeIndex,
    NodeView,
    Pool,
    PoolIndex,
    index_of,
    ineligibility,
    may_be_schedulable,
)

MAX_ADDED = 5_000  # nodes one run may add in all
MAX_NODES = 20_000  # nodes the changed pool may have


@dataclass(frozen=True)
class Changes:
    """What to try: nodes to add (a node's shape, how many), take out and bring back, the planner's settings, shares."""

    add: tuple[tuple[str, int], ...] = ()
    remove: tuple[str, ...] = ()  # node names, or label=value
    restore: tuple[str, ...] = ()  # node names, or label=value: nodes no one may book now, back
    weights: Mapping[str, float] | None = None
    top_n: int | None = None
    placer: str | None = None
    # The changed side's shares (tenant, guaranteed, borrowing limit, lending limit), whole GPUs;
    # none: the pool's stored shares, as on the baseline.
    shares: tuple[tuple[str, int, int | None, int | None], ...] = ()

    def __bool__(self) -> bool:
        return bool(self.inventory() or self.weights or self.top_n is not None or self.placer or self.shares)

    def inventory(self) -> bool:
        """Return whether the pool's nodes change (else the baseline's index serves both sides)."""
        return bool(self.add or self.remove or self.restore)


def left_out(index: PoolIndex, pool: Pool) -> dict[str, str]:
    """Return the nodes no one may book now, each with the placer's reason, in name order."""
    out = {}
    for view in index.nodes.views:
        if not may_be_schedulable(view, pool):
            why = ineligibility(view, pool)
            out[view.id] = why.reason if why is not None else "NoSchedule"
    return dict(sorted(out.items()))


def bookable_index(index: PoolIndex, pool: Pool) -> PoolIndex:
    """Return the pool's index without the nodes no one may book now (the baseline's pool)."""
    gone = set(left_out(index, pool))
    if not gone:
        return index
    base = index.nodes
    return index_of(
        NodeIndex(
            [v for v in base.views if v.id not in gone],
            {name: pk for name, pk in base.node_pk.items() if name not in gone},
            dict(base.device_pk),
            {k: list(v) for k, v in base.children.items()},
            dict(base.device_class),
        )
    )


def selected(index: PoolIndex, selectors: tuple[str, ...], option: str) -> set[str]:
    """Return the names the selectors pick; an unknown name or a label no node has is an error."""
    out: set[str] = set()
    for selector in selectors:
        key, eq, value = selector.partition("=")
        if eq:
            found = {v.id for v in index.nodes.views if v.labels.get(key) == value}
        else:
            found = {selector} if selector in index.by_name else set()
        if not found:
            raise CapacityError(INVALID_INPUT, f"{option}: no node of the pool is {selector!r}")
        out |= found
    return out


def restored(index: PoolIndex, pool: Pool, selectors: tuple[str, ...]) -> dict[str, str]:
    """Return the nodes no one may book now that the selectors bring back, with why they were out.

    A name that may be booked already, a label none of whose nodes is out, or a node that never
    adds capacity to the pool (its role, trust or owner: the pool page's "excluded") is refused.
    """
    out = left_out(index, pool)
    found: dict[str, str] = {}
    for selector in selectors:
        names = selected(index, (selector,), "--restore-nodes")
        back = sorted(n for n in names if n in out)
        if not back:
            raise CapacityError(
                INVALID_INPUT,
                f"--restore-nodes: {selector!r} may be booked already; only nodes no one may book now come back",
            )
        for name in back:
            why = ineligibility(index.by_name[name], pool)
            if why is not None and why.bucket == "excluded":
                raise CapacityError(
                    INVALID_INPUT, f"--restore-nodes: {name} never adds capacity to this pool ({why.reason})"
                )
            found[name] = out[name]
    return dict(sorted(found.items()))


def as_new(view: NodeView) -> NodeView:
    """Return the node as bookable: out of maintenance, uncordoned, active, connected, with no
    NoSchedule reason but its dedications (who may book it is the operator's, not its state)."""
    return dataclasses.replace(
        view,
        maintenance=False,
        cordoned=False,
        provision_state="active",
        converged=True,
        connectivity="connected",
        no_schedule_reasons=tuple(r for r in view.no_schedule_reasons if r.startswith(DEDICATED_PREFIX)),
    )


def changed_index(index: PoolIndex, pool: Pool, changes: Changes) -> PoolIndex:
    """Return a copy of the pool's index (all of it) with the nodes the changes bring back, take out
    and add, and without the nodes no one may book that were not brought back."""
    back = restored(index, pool, changes.restore)
    gone = selected(index, changes.remove, "--remove-nodes")
    total_added = sum(count for _, count in changes.add)
    if total_added > MAX_ADDED:
        raise CapacityError(
            INVALID_INPUT, f"--add-nodes: at most {MAX_ADDED:,} nodes in all, not {total_added:,}"
        )
    if len(index.by_name) - len(gone) + total_added > MAX_NODES:
        raise CapacityError(
            INVALID_INPUT, f"--add-nodes: the changed pool may have at most {MAX_NODES:,} nodes"
        )
    gone |= set(left_out(index, pool)) - set(back)
    base = index.nodes
    views = [as_new(v) if v.id in back else v for v in base.views if v.id not in gone]
    views = [v for v in views if may_be_schedulable(v, pool)]  # two dedications: still no one's
    kept = {v.id for v in views}
    node_pk = {name: pk for name, pk in base.node_pk.items() if name in kept}
    device_pk = dict(base.device_pk)
    children = {k: list(v) for k, v in base.children.items()}
    device_class = dict(base.device_class)
    next_node = max(base.node_pk.values(), default=0) + 1
    next_device = max(base.device_pk.values(), default=0) + 1
    names = set(index.by_name)
    for shape, count in changes.add:
        template = index.by_name.get(shape)
        if template is None:
            raise CapacityError(INVALID_INPUT, f"--add-nodes: no node {shape!r} in the pool to copy")
        number = 0
        for _ in range(count):
            number += 1
            while f"{shape}+{number}" in names:
                number += 1
            name = f"{shape}+{number}"
            names.add(name)
            ids = {a.id: f"{a.id}+{name}" for a in template.devices}
            atoms = tuple(
                dataclasses.replace(
                    a,
                    id=ids[a.id],
                    parent_id=ids.get(a.parent_id) if a.parent_id else None,
                    healthy=True,
                    bookable=True,
                )
                for a in template.devices
            )
            by_id = {a.id: a for a in atoms}
            views.append(
                as_new(
                    dataclasses.replace(
                        template,
                        id=name,
                        devices=atoms,
                        free=tuple(by_id[ids[a.id]] for a in template.free),
                        links={ids[a]: {ids[b]: r for b, r in m.items()} for a, m in template.links.items()},
                        shape=None,
                    )
                )
            )
            node_pk[name] = next_node
            next_node += 1
            for atom in template.devices:
                device_pk[ids[atom.id]] = next_device
                next_device += 1
                if atom.id in base.device_class:
                    device_class[ids[atom.id]] = base.device_class[atom.id]
            for parent, slices in base.children.items():
                if parent in ids:
                    children[ids[parent]] = [ids[s] for s in slices]
    views.sort(key=lambda v: v.id)
    return index_of(NodeIndex(views, node_pk, device_pk, children, device_class))
