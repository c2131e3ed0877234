"""The history of nodes, their taints and labels: who changed what, when and why.

django-simple-history writes a snapshot row on every save and delete of a registered model. This
module adds to each row the actor as text (a username; a command such as "command:cordon";
else "system") and the change in words ("cordoned", "label rack: r1 → r2"), takes the reason from
`recording(reason=…)`, and skips a save that changes nothing an operator would read, so that a node
report that repeats itself leaves no row. It imports no model: the models import it.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from types import MappingProxyType
from typing import Any

from django.db import models
from django.dispatch import receiver
from simple_history.models import HistoricalRecords
from simple_history.signals import pre_create_historical_record

from trail.context import acting_as, request_id

SYSTEM = "system"
REASON_MAX = 200
REASON_PROBLEM = f"reason must be text of at most {REASON_MAX} characters"

# (action, change in words), or None for a save that changed nothing worth a row.
Words = tuple[str, str] | None
Describe = Callable[[Any, str, dict[str, Any] | None], Words]

# Read-only mappings: `recording` sets a new one, never changes the current one.
_context: contextvars.ContextVar[Mapping[str, str]] = contextvars.ContextVar(
    "berth_history", default=MappingProxyType({})
)


@contextmanager
def recording(*, actor: str | None = None, reason: str | None = None) -> Iterator[None]:
    """Record the changes made inside as by `actor` (when no user is signed in) and for `reason`."""
    given = {k: v for k, v in (("actor", actor), ("reason", reason)) if v}
    token = _context.set(MappingProxyType({**_context.get(), **given}))
    try:
        with acting_as(actor):  # the audit trail's other rows name the same actor
            yield
    finally:
        _context.reset(token)


def reason_problem(reason: object) -> str | None:
    """Return why a reason is refused (too long, control characters, not text), else None."""
    if not isinstance(reason, str) or len(reason) > REASON_MAX or any(ord(c) < 32 for c in reason):
        return REASON_PROBLEM
    return None


class HistoryFields(models.Model):
    """What Berth adds to every history row: the actor as text and the change in words.

    The actor is kept as text beside simple-history's `history_user`, so that a change made by a
    command or by the system has one too, and a deleted user's changes keep their name.
    """

    actor = models.CharField(max_length=150, default=SYSTEM)
    action = models.CharField(max_length=30, help_text="cordon, taint-add, label-set, …")
    change = models.CharField(max_length=600, help_text="What changed, in words.")
    request_id = models.CharField(max_length=64, null=True, blank=True, help_text="The request that made it.")

    class Meta:
        abstract = True


class RemembersLoaded:
    """Keep the values a row had when loaded, so that a save can say what it changed.

    The row is loaded under its lock by every service, so these are the values it replaces.
    """

    @classmethod
    def from_db(cls, db, field_names, values, **kwargs):
        instance = super().from_db(db, field_names, values, **kwargs)  # type: ignore[misc]
        instance._loaded = dict(zip(field_names, values, strict=True))
        return instance


RECORDERS: dict[type, ChangeHistory] = {}


class ChangeHistory(HistoricalRecords):
    """simple-history's recorder, writing a row only for a real change and saying what it was."""

    def __init__(self, describe: Describe, **kwargs: Any) -> None:
        kwargs.setdefault("bases", [HistoryFields])
        kwargs.setdefault("history_change_reason_field", models.TextField(null=True))
        kwargs.setdefault("excluded_fields", [])
        super().__init__(**kwargs)
        self.describe = describe

    def finalize(self, sender, **kwargs):
        super().finalize(sender, **kwargs)
        if sender is self.cls:
            RECORDERS[sender] = self

    def get_change_reason_for_object(self, instance, history_type, using):
        return super().get_change_reason_for_object(instance, history_type, using) or _context.get().get(
            "reason"
        )

    def create_historical_record(self, instance, history_type, using=None):
        before = getattr(instance, "_loaded", None) if history_type == "~" else None
        if history_type == "~" and before is None:
            before = self._latest(instance)
        words = self.describe(instance, history_type, before)
        if words is None:
            return
        instance._history_words = words
        try:
            super().create_historical_record(instance, history_type, using)
        finally:
            del instance._history_words
        # A second save of the same object says what changed since this one.
        instance._loaded = {f.attname: getattr(instance, f.attname) for f in instance._meta.concrete_fields}

    def _latest(self, instance) -> dict[str, Any] | None:
        """Return the values of the row's latest snapshot (for an object not loaded from the database)."""
        manager = getattr(instance, self.manager_name)
        last = manager.order_by("-history_date", "-history_id").first()
        if last is None:
            return None
        return {f.attname: getattr(last, f.attname, None) for f in instance._meta.concrete_fields}


def record_event(instance, action: str, change: str) -> None:
    """Record an event about `instance` that is no change of its own fields (what a report changed)."""
    instance._history_words = (action, change)
    try:
        HistoricalRecords.create_historical_record(RECORDERS[type(instance)], instance, "~")
    finally:
        del instance._history_words


def record_update(instance) -> None:
    """Record a change made with `QuerySet.update()` (no signal), the new values set on `instance`."""
    RECORDERS[type(instance)].create_historical_record(instance, "~")


@receiver(pre_create_historical_record)
def _fill_words(sender, instance, history_instance, history_user, **kwargs) -> None:
    words = getattr(instance, "_history_words", None)
    if words is None:
        return
    action, change = words
    # Label keys and values, and taint parts, can each be 253 characters: say the change, cut short.
    limit = HistoryFields._meta.get_field("change").max_length
    history_instance.action = action
    history_instance.change = change if len(change) <= limit else change[: limit - 1] + "…"
    history_instance.request_id = request_id()
    history_instance.actor = (
        history_user.get_username() if history_user is not None else _context.get().get("actor", SYSTEM)
    )


def _changed(before: dict[str, Any] | None, instance, fields: tuple[str, ...]) -> dict[str, tuple]:
    if before is None:
        return {}
    return {
        f: (before[f], getattr(instance, f))
        for f in fields
        if f in before and before[f] != getattr(instance, f)
    }


NODE_FIELDS = (
    "name",
    "pool_id",
    "role",
    "provision_state",
    "connectivity",
    "trust",
    "owner_tenant_id",
    "converged",
    "maintenance",
    "cordoned",
    "drain_started_at",
    "drain_reason",
)


def describe_node(node, history_type: str, before: dict[str, Any] | None) -> Words:
    """Say what a node's save changed: "cordoned", "drain started", "maintenance ended", …."""
    if history_type == "+":
        return ("create", "node created")
    if history_type == "-":
        return ("delete", "node deleted")
    if before is None:
        return ("edit", "node edited")
    changed = _changed(before, node, NODE_FIELDS)
    if not changed:
        return None
    said: list[tuple[str, str]] = []
    drain = changed.pop("drain_started_at", None)
    if drain:
        changed.pop("drain_reason", None)
    cordon = changed.pop("cordoned", None)
    if drain and drain[1] is not None:
        said.append(("drain", "drain started"))  # a drain cordons: one row says both
    elif cordon:
        said.append(("cordon", "cordoned") if cordon[1] else ("uncordon", "uncordoned"))
    if drain and drain[1] is None:
        said.append(("drain-end", "drain ended"))
    maintenance = changed.pop("maintenance", None)
    if maintenance:
        said.append(
            ("maintenance-on", "maintenance started")
            if maintenance[1]
            else ("maintenance-off", "maintenance ended")
        )
    for field, (old, new) in changed.items():
        said.append(("edit", f"{field.removesuffix('_id')}: {old} → {new}"))
    # The row is named for the operator's action (an uncordon that also ends a drain is an uncordon).
    action = next((a for a, _ in said if a != "edit"), "edit")
    return (action, "; ".join(text for _, text in said))


def _taint_text(value: str, effect: str) -> str:
    return f"={value}:{effect}" if value else f":{effect}"


def describe_taint(taint, history_type: str, before: dict[str, Any] | None) -> Words:
    """Say what a taint's save changed; the `dedicated` taint reads as a dedication."""
    key, text = taint.key, _taint_text(taint.value, taint.effect)
    dedication = key == "dedicated"
    if history_type == "+":
        return (
            ("dedicate", f"dedicated to {taint.value}")
            if dedication
            else ("taint-add", f"taint {key}{text} added")
        )
    if history_type == "-":
        return (
            ("undedicate", f"dedication to {taint.value} ended")
            if dedication
            else ("taint-remove", f"taint {key}{text} removed")
        )
    changed = _changed(before, taint, ("value", "effect"))
    if before is not None and not changed:
        return None
    if dedication:
        was = f" (was {before['value']})" if before is not None and "value" in changed else ""
        return ("dedicate", f"dedicated to {taint.value}{was}")
    if before is None:
        return ("taint-add", f"taint {key}{text} set")
    old = _taint_text(before["value"], before["effect"])
    return ("taint-change", f"taint {key}: {key}{old} → {key}{text}")


def describe_label(label, history_type: str, before: dict[str, Any] | None) -> Words:
    """Say what a label's save changed: "label rack=r1 set", "label rack: r1 → r2", …."""
    system = "system " if label.source == "system" else ""
    if history_type == "+":
        return ("label-set", f"{system}label {label.key}={label.value} set")
    if history_type == "-":
        return ("label-remove", f"{system}label {label.key}={label.value} removed")
    changed = _changed(before, label, ("value", "source"))
    if before is None:
        return ("label-set", f"{system}label {label.key}={label.value} set")
    if not changed:
        return None
    if "value" in changed:
        return ("label-set", f"{system}label {label.key}: {before['value']} → {label.value}")
    return ("label-set", f"label {label.key}={label.value} now {label.source}")
