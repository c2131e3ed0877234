"""Scalar claims read as arrays, grouped per node only when a plan asks about the node, and the most
each node's claims hold at once in a window (WindowUse)."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterator, Mapping

from capacity.placement import Window
from capacity.placement.timeline import peak

Claim = tuple[int, int, int]  # start ms, end ms, amount

# The order of the arrays a Claims is built from: by node first, then by every other column, so
# that each array_agg, sorting on its own, puts the claims in the same order (ties only between
# identical rows). Columns as the queries name them: node_id, resource, lo, hi (ms), amount.
CLAIM_ORDER = "node_id, resource, lo, hi, amount"


class Claims(Mapping[str, dict[str, list[Claim]]]):
    """Node name -> resource -> its claims in a window (or a batch's span), grouped per node when asked.

    The rows come as arrays sorted by node pk (`node_pk` maps a name to it, `node_name` back); a
    node's slice is found by bisection, so building this costs no Python loop over the rows.
    """

    def __init__(
        self,
        node_pk: Mapping[str, int],
        node_name: Mapping[int, str],
        nodes: list[int],
        names: list[str],
        starts: list[int],
        ends: list[int],
        amounts: list[int],
    ):
        self._node_pk = node_pk
        self._rows = (nodes, names, starts, ends, amounts)
        # Nodes of this pool with a claim (the key range may hold other pools' nodes too).
        self._with_claims = {node_name[pk] for pk in set(nodes) if pk in node_name}
        self._grouped: dict[str, dict[str, list[Claim]]] = {}

    def _group(self, name: str) -> dict[str, list[Claim]]:
        found = self._grouped.get(name)
        if found is None:
            found = self._grouped[name] = {}
            pk = self._node_pk.get(name)
            if pk is not None:
                nodes, names, starts, ends, amounts = self._rows
                for k in range(bisect_left(nodes, pk), bisect_right(nodes, pk)):
                    found.setdefault(names[k], []).append((starts[k], ends[k], amounts[k]))
        return found

    def __getitem__(self, name: str) -> dict[str, list[Claim]]:
        if name not in self._with_claims:
            raise KeyError(name)
        return self._group(name)

    def __contains__(self, name: object) -> bool:
        return name in self._with_claims

    def get(self, name: str, default: dict[str, list[Claim]] | None = None) -> dict[str, list[Claim]] | None:  # type: ignore[override]
        return self._group(name) if name in self._with_claims else default

    def __iter__(self) -> Iterator[str]:
        return iter(self._with_claims)

    def __len__(self) -> int:
        return len(self._with_claims)

    def held(self, name: str, resource: str) -> list[Claim]:
        """Return the node's claims of the resource, as a list a plan may add to or take from."""
        self._with_claims.add(name)
        return self._group(name).setdefault(resource, [])


class WindowUse(Mapping[str, Mapping[str, int]]):
    """Node name -> resource -> the most its claims hold at once in one window, swept when first asked.

    `held` is node -> resource -> claims, and may hold claims outside the window and of other
    resources (a batch's ledger hands over all of its own): each node is looked at only when
    asked, so a request pays for the nodes it considers, not for every node with a claim. The
    plain sum of a node's claims in the window bounds the peak from above, so `Short` sweeps only
    the nodes that sum could make short.
    """

    def __init__(self, held: Mapping[str, Mapping[str, list[tuple[int, int, int]]]], window: Window, wanted):
        self.window = window
        self.held = held
        self.wanted = tuple(wanted)
        self._swept: dict[str, dict[str, int]] = {}

    def __getitem__(self, node: str) -> dict[str, int]:
        found = self._swept.get(node)
        if found is None:
            if node not in self.held:
                raise KeyError(node)
            start, end = self.window.start, self.window.end
            claims = self.held[node]
            found = self._swept[node] = {
                resource: most
                for resource in self.wanted
                if resource in claims and (most := peak(claims[resource], start, end))
            }
        return found

    def get(self, node: str, default=None):  # type: ignore[override]
        # Most nodes hold no claim: answered without the KeyError Mapping.get would catch.
        return self[node] if node in self.held else default

    def __iter__(self) -> Iterator[str]:
        return iter(self.held)

    def __len__(self) -> int:
        return len(self.held)

    def bound(self, node: str, resource: str) -> int:
        """Return the sum of the node's claims of a resource in the window: at least their peak."""
        claims = self.held.get(node, {}).get(resource)
        if not claims:
            return 0
        start, end = self.window.start, self.window.end
        return sum(n for s, e, n in claims if s < end and e > start)
