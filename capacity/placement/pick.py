"""GPU links and the default NVLink- and NUMA-aware atom pick."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from .types import Atom, NodeView

LINK_RANKS: Final = ("NV", "PIX", "PXB", "PHB", "NODE", "SYS")
LINK_RANK: Final[Mapping[str, int]] = {name: rank for rank, name in enumerate(LINK_RANKS)}
NV_RANK: Final = 0
WORST_KNOWN_RANK: Final = LINK_RANK["SYS"]
# An unknown link is worse than any known one while growing a pick.
UNKNOWN_RANK: Final = WORST_KNOWN_RANK + 1
_PERFECT: Final = (NV_RANK, 1)
# nvidia-smi prints NVLink as NV<n> (the number of bonded links), and older drivers print SYS as SOC.
_RANKS: Final[dict[str | None, int]] = {}
_RANKS.update(LINK_RANK)
_RANKS.update({f"NV{n}": NV_RANK for n in range(1, 100)})
_RANKS["SOC"] = WORST_KNOWN_RANK


def link_rank(link: str | None) -> int:
    """Return the rank of a link name (NV=0 ... SYS=5), UNKNOWN_RANK when unknown."""
    return _RANKS.get(link, UNKNOWN_RANK)


def _reported(node: NodeView, a: str, b: str) -> str | None:
    links = node.links
    row = links.get(a)
    if row is not None:
        found = row.get(b)
        if found is not None:
            return found
    row = links.get(b)
    if row is not None:
        return row.get(a)
    return None


def link_between(node: NodeView, a: Atom, b: Atom) -> str | None:
    """Return the link between two atoms of node, or None when unknown.

    Slices of one GPU, and a GPU and its own slices, count as NV.
    """
    if a.id == b.id:
        return "NV"
    pa, pb = a.parent_id, b.parent_id
    if (pa is not None and (pa == pb or pa == b.id)) or (pb is not None and pb == a.id):
        return "NV"
    found = _reported(node, a.id, b.id)
    if found is not None:
        return found
    if pa is not None or pb is not None:
        # Inventory reports links between whole GPUs; a slice talks to other GPUs over its parent's link.
        return _reported(node, pa or a.id, pb or b.id)
    return None


def _is_sliced(atoms: Sequence[Atom]) -> bool:
    return any(a.parent_id is not None for a in atoms)


def _ranks_from(
    node: NodeView, atoms: Sequence[Atom], ids: Sequence[str], i: int, start: int, sliced: bool
) -> list[int]:
    """Return the ranks from atoms[i] to atoms[start:], reading links in either direction."""
    if sliced:
        a = atoms[i]
        return [link_rank(link_between(node, a, b)) for b in atoms[start:]]
    links = node.links
    ranks = _RANKS.get
    rest = ids[start:]
    own = links.get(ids[i])
    row = [ranks(own.get(b), UNKNOWN_RANK) for b in rest] if own is not None else [UNKNOWN_RANK] * len(rest)
    if start <= i:
        row[i - start] = NV_RANK
    if UNKNOWN_RANK in row:
        # A link reported in one direction only holds both ways.
        me = ids[i]
        for k, rank in enumerate(row):
            if rank == UNKNOWN_RANK:
                other = links.get(rest[k])
                if other is not None:
                    row[k] = ranks(other.get(me), UNKNOWN_RANK)
    return row


def rank_matrix(node: NodeView, atoms: Sequence[Atom]) -> list[list[int]]:
    """Return the link ranks between every pair of atoms, by position; the diagonal is NV."""
    ids = [a.id for a in atoms]
    sliced = _is_sliced(atoms)
    return [_ranks_from(node, atoms, ids, i, 0, sliced) for i in range(len(atoms))]


def worst_rank(node: NodeView, atoms: Sequence[Atom]) -> int:
    """Return the worst link rank among atoms (NV for fewer than two), UNKNOWN_RANK if any is unknown."""
    ids = [a.id for a in atoms]
    sliced = _is_sliced(atoms)
    worst = NV_RANK
    for i in range(len(atoms) - 1):
        rank = max(_ranks_from(node, atoms, ids, i, i + 1, sliced))
        if rank > worst:
            if rank == UNKNOWN_RANK:
                return rank
            worst = rank
    return worst


def seed_order(atom: Atom) -> tuple[bool, int, int, str]:
    """Return the sort key that makes picks deterministic: NUMA node (unknown last), index, id."""
    numa = atom.numa_node
    return (numa is None, numa if numa is not None else 0, atom.index, atom.id)


def default_pick(candidates: Sequence[Atom], count: int, node: NodeView) -> tuple[tuple[Atom, ...], int]:
    """Pick count of candidates; return them in seed order with their worst link rank.

    From every seed (in seed order) grow a set by adding the atom whose worst link to the set is best,
    same NUMA node as the seed breaking ties, then seed order. Keep the set with the best worst link,
    then the fewest NUMA nodes, then the earliest seed; stop as soon as no set can beat it.
    """
    ordered = sorted(candidates, key=seed_order)
    n = len(ordered)
    if count <= 0:
        return (), NV_RANK
    if count == 1:
        return (ordered[0],), NV_RANK
    if count >= n:
        return tuple(ordered), worst_rank(node, ordered)
    ids = [a.id for a in ordered]
    sliced = _is_sliced(ordered)
    # Rows are read lazily: a pick that stops at its first seed needs only the rows of its members.
    matrix: list[list[int] | None] = [None] * n

    def row_of(i: int) -> list[int]:
        found = matrix[i]
        if found is None:
            found = matrix[i] = _ranks_from(node, ordered, ids, i, 0, sliced)
        return found

    numa = [a.numa_node for a in ordered]
    # Growth keys fold (worst link, other NUMA node, seed order) into one int for fast comparisons.
    scale_rank = 2 * n
    penalties = {v: [j + (n if numa[j] != v else 0) for j in range(n)] for v in set(numa)}
    best_key: tuple[int, int] | None = None
    best_members: list[int] = []
    floor: tuple[int, int] | None = None
    everyone = range(n)
    for seed in everyone:
        penalty = penalties[numa[seed]]
        worst_to = row_of(seed)[:]
        taken = [False] * n
        taken[seed] = True
        members = [seed]
        set_worst = NV_RANK
        for _ in range(count - 1):
            pick = -1
            pick_key = 0
            for j in everyone:
                if not taken[j]:
                    grow_key = worst_to[j] * scale_rank + penalty[j]
                    if pick < 0 or grow_key < pick_key:
                        pick, pick_key = j, grow_key
            taken[pick] = True
            members.append(pick)
            if worst_to[pick] > set_worst:
                set_worst = worst_to[pick]
            row = row_of(pick)
            for j in everyone:
                if row[j] > worst_to[j]:
                    worst_to[j] = row[j]
        key = (set_worst, len({numa[m] for m in members}))
        if best_key is None or key < best_key:
            best_key, best_members = key, members
            if key == _PERFECT:
                break
            if floor is None:
                floor = (_worst_floor([row_of(i) for i in everyone], count), 1)
            if key == floor:
                break
    assert best_key is not None
    return tuple(ordered[m] for m in sorted(best_members)), best_key[0]


def _worst_floor(matrix: list[list[int]], count: int) -> int:
    # A set of count atoms holding atom i has a link from i no better than the (count-1)-th best in row i.
    return min(sorted(row)[count - 1] for row in matrix)


Shape = tuple[object, ...]
# (shape or its stand-in, count, positions of the candidates) -> (positions picked, worst link rank)
PickMemo = dict[tuple[object, int, tuple[int, ...]], tuple[tuple[int, ...], int]]


def node_shape(node: NodeView) -> Shape:
    """Return a key that is equal for nodes whose atoms and links match position by position.

    Each device's class, parent (by position), health, bookability, NUMA node and index, the order
    seed_order() puts them in, and the links between positions: everything default_pick() reads. Two
    nodes of one shape get the same pick from the same free positions, so a memo can share it.
    """
    devices = node.devices
    position = {a.id: i for i, a in enumerate(devices)}
    atoms = tuple(
        (
            a.device_class,
            None if a.parent_id is None else position.get(a.parent_id, -1),
            a.healthy,
            a.bookable,
            a.numa_node,
            a.index,
        )
        for a in devices
    )
    order = tuple(sorted(range(len(devices)), key=lambda i: seed_order(devices[i])))
    links = tuple(
        sorted(
            (position[a], position[b], str(link))
            for a, row in node.links.items()
            for b, link in row.items()
            if a in position and b in position
        )
    )
    return (atoms, order, links)


def memo_pick(
    candidates: Sequence[Atom], count: int, node: NodeView, shape: object, memo: PickMemo
) -> tuple[tuple[Atom, ...], int]:
    """Return default_pick(candidates, count, node), reusing the pick of an earlier node of this shape."""
    devices = node.devices
    position = {a.id: i for i, a in enumerate(devices)}
    key = (shape, count, tuple(sorted(position[a.id] for a in candidates)))
    found = memo.get(key)
    if found is None:
        chosen, worst = default_pick(candidates, count, node)
        memo[key] = (tuple(position[a.id] for a in chosen), worst)
        return chosen, worst
    return tuple(devices[i] for i in found[0]), found[1]
