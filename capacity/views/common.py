"""What the user may see (capacity.access decides; 404 otherwise), how pages name devices and draw bookings."""

from __future__ import annotations

import dataclasses
import json
import re
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.contrib.postgres.fields import BigIntegerRangeField
from django.db.backends.postgresql.psycopg_any import NumericRange
from django.db.models import BooleanField, ExpressionWrapper, F, Func, Q, Value
from django.http import Http404
from django.shortcuts import get_object_or_404
from django.utils import timezone

from capacity import access
from capacity.access import visible_pool as visible_pool  # the pool pages import it from here
from capacity.models import AnyDeviceBooking, DeviceBooking, Reservation
from capacity.models.reservations import AWAITING
from inventory.models import Device, Node, Pool, Tenant

NODES_PER_PAGE = 50
RESERVATIONS_PER_PAGE = 50
GRID_AHEAD = timedelta(days=7)
TIMELINE_BEHIND = timedelta(days=2)
TIMELINE_AHEAD = timedelta(days=7)
TIME_FORMAT = "%b %d %H:%M"
# Who holds a booking, to a tenant that may not read the holder's name.
ANOTHER_TENANT = "another tenant"


# --- who may see what ------------------------------------------------------------------------------


def visible_pools(user) -> list[Pool]:
    """Return the pools the user may read: all for operators, else those its tenants may book."""
    return list(access.pools_for(access.scope_for(user)))


def visible_tenants(user) -> list[Tenant]:
    """Return the tenants the user may book or preview for."""
    return access.tenants_for(access.scope_for(user))


def visible_node(user, name: str) -> Node:
    """Return the node if the user may read it (its pool, and not another tenant's), else raise 404."""
    # The pool comes with its site, owner and tenants, which the check and the rows read.
    node = get_object_or_404(
        Node.objects.select_related("pool__site", "pool__owner_tenant", "owner_tenant").prefetch_related(
            "pool__tenants"
        ),
        name=name,
    )
    owner = node.owner_tenant.slug if node.owner_tenant_id else None
    scope = access.scope_for(user)
    if not access.may_read_node(scope, owner) or not access.may_read_pool(scope, node.pool):
        raise Http404(f"no node {name}")
    return node


# --- bookings as the pages draw them ---------------------------------------------------------------


@dataclass
class Booking:
    """One device booking, with the owner text this viewer may see.

    `holder` names the tenant for the viewer ("another tenant" for one it may not read); `lease`
    is a whole-node lease's booking (binding node), `spot` spot work that regular work may take back.
    """

    device_id: int
    start: datetime
    end: datetime
    owner: str
    mine: bool
    short: str = ""
    holder: str = ""
    reservation_id: int | None = None
    lease: bool = False
    spot: bool = False
    awaiting: bool = False  # placed, waiting for an operator's approval (told to whoever may read it)

    @property
    def text(self) -> str:
        kind = " (whole-node lease)" if self.lease else ""
        kind += " (spot)" if self.spot else ""
        kind += " (awaiting approval)" if self.awaiting else ""
        return f"{self.owner}{kind}: {self.start:{TIME_FORMAT}} – {self.end:{TIME_FORMAT}} UTC"


# A placed booking held for approval (policy/approval.py), read in the bookings' own statement.
_AWAITING = ExpressionWrapper(
    Q(
        allocation__reservation__status="placed",
        allocation__reservation__conditions__contains=[{"type": AWAITING}],
    ),
    output_field=BooleanField(),
)


def bookings_by_device(
    device_ids: list[int], start: datetime, end: datetime, user
) -> dict[int, list[Booking]]:
    """Return the bookings of these devices that overlap [start, end), in one query.

    Tenants see who holds a booking only when it is their own tenant's.
    """
    scope = access.scope_for(user)
    if not device_ids:
        return {}
    # The devices' id range as well as their ids: the EXCLUDE constraint's GiST index on
    # (int8range(device), during) answers both bounds at once. On `during` alone it read every
    # pool's bookings in the window (0.11 s at 50,000 live bookings, bench_scale; 2 ms this way).
    key = Func(
        F("device_id"), F("device_id"), Value("[]"), function="int8range", output_field=BigIntegerRangeField()
    )
    # A window reaching back past HISTORY_AFTER also reads the bookings moved to history.
    live = start >= timezone.now() - settings.HISTORY_AFTER
    rows = (
        (DeviceBooking if live else AnyDeviceBooking)
        .objects.annotate(key=key, awaiting=_AWAITING)
        .filter(
            key__overlap=NumericRange(min(device_ids), max(device_ids), "[]"),
            device_id__in=device_ids,
            during__overlap=(start, end),
        )
        .values_list(
            "device_id",
            "during",
            "allocation__reservation_id",
            "allocation__reservation__tenant__slug",
            "allocation__instance_id",
            # The same join as the tenant: what kind of booking it is costs no query.
            "allocation__reservation__binding",
            "allocation__reservation__priority",
            "awaiting",
        )
        .order_by("device_id", "during")
    )
    out: dict[int, list[Booking]] = defaultdict(list)
    for device_id, during, reservation_id, tenant, instance, binding, priority, awaiting in rows:
        mine = reservation_id is not None and scope.allows(tenant)
        if mine:
            owner, short = f"reservation {reservation_id} ({tenant})", f"#{reservation_id} {tenant}"
            holder = tenant
        elif scope.sees_every_tenant:
            owner, short = f"instance {instance}", f"instance {instance}"
            holder = owner
        else:
            owner, short, holder = "booked by another tenant", "booked", ANOTHER_TENANT
        out[device_id].append(
            Booking(
                device_id,
                during.lower,
                during.upper,
                owner,
                mine,
                short,
                holder=holder,
                reservation_id=reservation_id,
                lease=binding == Reservation.Binding.NODE,
                spot=priority == Reservation.Priority.SPOT,
                awaiting=bool(awaiting) and mine,
            )
        )
    return out


def device_label(device: Device, parent: Device | None = None) -> str:
    """Return how the pages name a device: GPU3, or GPU0 mig-1g.10gb #2 for a slice."""
    if parent is not None:
        return f"{device_label(parent)} {device.device_class} #{device.index}"
    prefix = "GPU" if device.device_class == "gpu" else device.device_class
    return f"{prefix}{device.index}"


def atom_labels(uuids: list[str]) -> dict[str, str]:
    """Return GPU3-style names for device uuids (one query)."""
    devices = Device.objects.filter(uuid__in=uuids).select_related("parent")
    return {d.uuid: device_label(d, d.parent) for d in devices}


def asked_text(asked: dict) -> str:
    """Return a request as its caller sent it, as indented JSON, its window's times read in UTC."""
    during = asked.get("during")
    if isinstance(during, dict):
        times = {k: utc_text(during[k]) for k in ("start", "end") if k in during}
        asked = {**asked, "during": {**during, **times}}
    return json.dumps(asked, indent=2, ensure_ascii=False)


def utc_text(value: object) -> object:
    """Return epoch milliseconds or an ISO 8601 time as "YYYY-MM-DD HH:MM:SS UTC"; anything else as is."""
    try:
        if isinstance(value, int) and not isinstance(value, bool):
            at = datetime.fromtimestamp(value / 1000, UTC)
        elif isinstance(value, str):
            at = datetime.fromisoformat(value.replace("Z", "+00:00"))
            if at.tzinfo is None:
                return value
        else:
            return value
    except (ValueError, OverflowError, OSError):
        return value
    return at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


# An ISO 8601 time in a condition's message (an approval's hold): read as the pages write times.
ISO_TIME = re.compile(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d(?::\d\d(?:\.\d+)?)?(?:Z|[+-]\d\d:\d\d)")


def utc_message(condition):
    """Return a condition (a dict or a history line) with its message's ISO times as "YYYY-MM-DD HH:MM:SS UTC"."""
    if isinstance(condition, dict) and isinstance(condition.get("message"), str):
        return {**condition, "message": utc_words(condition["message"])}
    if dataclasses.is_dataclass(condition) and isinstance(getattr(condition, "message", None), str):
        return dataclasses.replace(condition, message=utc_words(condition.message))
    return condition


def utc_words(text: str) -> str:
    """Return text with each ISO 8601 time in it as "YYYY-MM-DD HH:MM:SS UTC"."""
    return ISO_TIME.sub(lambda m: str(utc_text(m[0])), text)
