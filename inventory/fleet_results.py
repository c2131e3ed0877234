"""What a fleet import is asked to do and what it did: options, per-node diffs and results."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["FleetOptions", "FleetResult", "NodeDiff", "NodeResult"]


@dataclass(frozen=True)
class FleetOptions:
    """How to import: the pool of new nodes, and the operator's explicit permissions."""

    pool: str | None = None
    dry_run: bool = False
    replace_devices: bool = False
    keep_numa: bool = False


@dataclass
class NodeDiff:
    """What an import changes (or would change) on one node, as lines an operator reads."""

    node: str  # "added" or "exists"
    pool: str
    devices: dict[str, list[str]] = field(default_factory=lambda: {"added": [], "changed": [], "removed": []})
    links: dict[str, list[str]] = field(default_factory=lambda: {"added": [], "changed": [], "removed": []})

    @property
    def changes(self) -> bool:
        """Whether anything changes at all."""
        return self.node == "added" or any(self.devices.values()) or any(self.links.values())

    def as_dict(self) -> dict[str, Any]:
        """Return the diff as the API answers it."""
        return {"node": self.node, "pool": self.pool, "devices": self.devices, "links": self.links}


@dataclass
class NodeResult:
    """One node's outcome: `imported` (`would import` in a dry run), `unchanged`, or `failed` (code, message)."""

    name: str
    status: str
    diff: NodeDiff | None = None
    code: str | None = None
    message: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """Return the result as the API answers it."""
        data: dict[str, Any] = {"name": self.name, "status": self.status}
        if self.diff is not None:
            data["diff"] = self.diff.as_dict()
        if self.code is not None:
            data.update(code=self.code, message=self.message)
        return data


@dataclass
class FleetResult:
    """Every node's outcome, in the order given."""

    dry_run: bool
    nodes: list[NodeResult]

    @property
    def failed(self) -> list[NodeResult]:
        """The nodes that failed."""
        return [n for n in self.nodes if n.status == "failed"]

    def summary(self) -> str:
        """Return `imported 9 nodes, 1 failed: n7 (…)`; a dry run says what it would do."""
        done = len(self.nodes) - len(self.failed)
        line = f"{'dry run: would import' if self.dry_run else 'imported'} {done} node{'s' * (done != 1)}"
        if self.failed:
            line += f", {len(self.failed)} failed: " + ", ".join(
                f"{n.name} ({n.message})" for n in self.failed
            )
        return line + ("; nothing stored" if self.dry_run else "")
