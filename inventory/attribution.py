"""Whose processes run on a node's GPUs: a report's `processOwners`, as the node's agent attributes them.

The agent hands every job it sets up the reservation it runs for (BERTH_RESERVATION_ID, in the
reservations/ID.env it writes) and reads it back from each GPU process's environment. A report
that says `processOwners` (even empty) attributes: a process it does not list is one the agent
could not attribute. One that leaves it out (an older agent) attributes nothing, and its samples
say nothing of whose processes they count (docs/agent.md, docs/policy.md).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from inventory.errors import IngestError
from inventory.nvsmi import MAX_PID, MAX_PROCESSES

# At most one entry per process a report can list: MAX_PROCESSES on each of a node's GPUs is far
# more than a node runs; 4,096 bounds what one report can cost.
MAX_OWNED = 4096
# Reservation ids are bigint keys; a booking made through the capacity port is named by its
# instance id (a plain name), which no lent work has: it counts as not lent work (NOT_LENT_WORK).
MAX_RESERVATION_ID = 2**63 - 1
NOT_ATTRIBUTED = 0
_NAME_RE = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9._-]{0,199}\Z")
_FIELDS = {"pid", "reservationId"}


def read_owners(raw: Any) -> dict[int, int]:
    """Check `processOwners` ([{"pid", "reservationId"}]) and return pid -> reservation pk.

    A reservationId that is a port instance's name (not a number) maps to NOT_ATTRIBUTED: it is
    no reservation Berth lends GPUs to.
    """
    if not isinstance(raw, list):
        raise IngestError('processOwners: must be a list of {"pid", "reservationId"}')
    if len(raw) > MAX_OWNED:
        raise IngestError(f"processOwners: {len(raw)} entries; at most {MAX_OWNED}")
    owners: dict[int, int] = {}
    for n, item in enumerate(raw):
        where = f"processOwners[{n}]"
        if not isinstance(item, dict):
            raise IngestError(f'{where}: must be an object {{"pid", "reservationId"}}')
        unknown = sorted(set(item) - _FIELDS)
        if unknown:
            raise IngestError(f"{where}.{unknown[0]}: unknown field (expected pid, reservationId)")
        pid = item.get("pid")
        if not _is_int(pid) or not 0 <= pid <= MAX_PID:
            raise IngestError(f"{where}.pid: must be a process id (0 to {MAX_PID})")
        if pid in owners:
            raise IngestError(f"{where}.pid: process {pid} is listed twice")
        owners[pid] = _reservation(item.get("reservationId"), f"{where}.reservationId")
    return owners


def _reservation(value: Any, where: str) -> int:
    if _is_int(value) and 1 <= value <= MAX_RESERVATION_ID:
        return value
    if isinstance(value, str) and _NAME_RE.match(value):
        if value.isdigit() and len(value) <= 19 and 1 <= int(value) <= MAX_RESERVATION_ID:
            return int(value)
        return NOT_ATTRIBUTED
    raise IngestError(f"{where}: must be a reservation id (a positive whole number) or an instance id")


def attributed(pids: Iterable[int], owners: dict[int, int]) -> list[int]:
    """Return whose a device's processes are: the sorted distinct reservations, 0 for any not attributed."""
    return sorted({owners.get(pid, NOT_ATTRIBUTED) for pid in pids})[:MAX_PROCESSES]


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
