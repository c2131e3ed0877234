"""The maintenance window form of the node and pool pages: its checks are the service's own.

Times are typed as UTC (the pages read UTC); a time without a zone is taken as UTC. Every refusal
of maintenance.windows names its field and is shown next to it; nothing is written then.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django import forms

from capacity.port import CapacityError

from . import windows as maintenance
from .windows import Scheduled

FIELDS = ("nodes", "start", "end", "reason", "move")
TIME_HELP = "UTC, e.g. 2026-12-08 00:00"


def _utc(text: str) -> str:
    """Return a typed time as the service reads it (ISO 8601 with a zone): UTC when none is given."""
    try:
        parsed = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise forms.ValidationError("Enter a time such as 2026-12-08 00:00 (UTC).") from None
    return (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).isoformat()


class WindowForm(forms.Form):
    """Schedule a maintenance window over a node or a pool (its nodes, or those named)."""

    nodes = forms.CharField(
        required=False,
        label="Nodes",
        help_text="Comma-separated; blank: every node of the pool.",
        widget=forms.TextInput(attrs={"placeholder": "every node of the pool", "size": 30}),
    )
    start = forms.CharField(
        label="Start (UTC)",
        help_text=TIME_HELP,
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}),
    )
    end = forms.CharField(
        label="End (UTC)",
        help_text=TIME_HELP,
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}),
    )
    # No max_length (a browser would cut a paste silently): the service refuses past 200 and says so.
    reason = forms.CharField(
        required=False,
        strip=False,
        label="Reason",
        widget=forms.TextInput(attrs={"placeholder": "e.g. firmware update", "size": 30}),
    )
    move = forms.BooleanField(
        required=False,
        label="Move the bookings that have not started off now (as drain does)",
    )

    prefix = "window"  # its fields apart from the node panel's (reason, ...)

    def __init__(self, *args: Any, pool_page: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if not pool_page:
            del self.fields["nodes"]

    def clean_start(self) -> str:
        return _utc(self.cleaned_data["start"])

    def clean_end(self) -> str:
        return _utc(self.cleaned_data["end"])

    def schedule(self, *, pool: str | None = None, node: str | None = None, by: str = "") -> Scheduled | None:
        """Schedule the window on `node`, or on the pool's nodes (those named, else all); None on errors."""
        if not self.is_valid():
            return None
        data = self.cleaned_data
        body: dict[str, Any] = {k: data[k] for k in ("start", "end", "reason", "move")}
        named = [n.strip() for n in (data.get("nodes") or "").split(",") if n.strip()]
        if node is not None:
            body["nodes"] = [node]
        elif named:
            outside = maintenance.outside_pool(named, pool)
            if outside:
                self.add_error("nodes", f"not in {pool}: {', '.join(outside)}")
                return None
            body["nodes"] = named
        else:
            body["pool"] = pool
        try:
            return maintenance.schedule(body, by=by)
        except CapacityError as err:
            field = err.message.split(" ", 1)[0].rstrip(":")
            field = "nodes" if field == "pool" else field
            self.add_error(field if field in self.fields else None, err.message)
            return None
