"""The changed pool of a what-if run: a copy of the pool's index with nodes added and taken out.

Nothing is written: the copy lives in this process only. An added node copies a node of the pool
(its devices, links, labels and scalar resources), named `<shape>+<n>`, with keys above every
real one, so it can never be mistaken for a row.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

from capacity.placement import INVALID_INPUT, CapacityError
from capacity.placers.index import PoolIndex, index_of
from capacity.placers.loader import NodeIndex

MAX_ADDED = 5_000  # nodes one run may add in all
MAX_NODES = 20_000  # nodes the changed pool may have


@dataclass(frozen=True)
class Changes:
    """What to try: nodes to add (a node's shape, how many) and take out, and the planner's settings."""

    add: tuple[tuple[str, int], ...] = ()
    remove: tuple[str, ...] = ()  # node names, or label=value
    weights: Mapping[str, float] | None = None
    top_n: int | None = None
    placer: str | None = None

    def __bool__(self) -> bool:
        return bool(self.add or self.remove or self.weights or self.top_n is not None or self.placer)

    def inventory(self) -> bool:
        """Return whether the pool's nodes change (else the baseline's index serves both sides)."""
        return bool(self.add or self.remove)


def removed(index: PoolIndex, selectors: tuple[str, ...]) -> set[str]:
    """Return the names the selectors take out; an unknown name or a label no node has is an error."""
    out: set[str] = set()
    for selector in selectors:
        key, eq, value = selector.partition("=")
        if eq:
            found = {v.id for v in index.nodes.views if v.labels.get(key) == value}
        else:
            found = {selector} if selector in index.by_name else set()
        if not found:
            raise CapacityError(INVALID_INPUT, f"--remove-nodes: no node of the pool is {selector!r}")
        out |= found
    return out


def changed_index(index: PoolIndex, changes: Changes) -> PoolIndex:
    """Return a copy of the pool's index with the changes' nodes added and taken out."""
    if not changes.inventory():
        return index
    gone = removed(index, changes.remove)
    total_added = sum(count for _, count in changes.add)
    if total_added > MAX_ADDED:
        raise CapacityError(
            INVALID_INPUT, f"--add-nodes: at most {MAX_ADDED:,} nodes in all, not {total_added:,}"
        )
    if len(index.by_name) - len(gone) + total_added > MAX_NODES:
        raise CapacityError(
            INVALID_INPUT, f"--add-nodes: the changed pool may have at most {MAX_NODES:,} nodes"
        )
    base = index.nodes
    views = [v for v in base.views if v.id not in gone]
    node_pk = {name: pk for name, pk in base.node_pk.items() if name not in gone}
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
                dataclasses.replace(a, id=ids[a.id], parent_id=ids.get(a.parent_id) if a.parent_id else None)
                for a in template.devices
            )
            by_id = {a.id: a for a in atoms}
            views.append(
                dataclasses.replace(
                    template,
                    id=name,
                    devices=atoms,
                    free=tuple(by_id[ids[a.id]] for a in template.free),
                    links={ids[a]: {ids[b]: r for b, r in m.items()} for a, m in template.links.items()},
                    shape=None,
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
