"""What a node's agent calls with the node's own credential: its assignments (and the node report,
in report.py). The operators' endpoint that issues a node its credential is identity's
(identity/token_api.py)."""

from __future__ import annotations

import time

from django.db import connection
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from capacity.port import INVALID_INPUT, SLOTS, WATCH, CapacityError, stopping
from config.api.base import BerthAPIView
from config.api.schema import errors

from .assignments import assignments
from .permissions import IsOperatorOrTheNode
from .shapes import NodeAssignmentsSerializer

# How long an agent's long-poll may wait for a change of its node's assignments.
MAX_WAIT_SECONDS = 60
# A long-poll refused its wait (capacity.waits.SLOTS) answers at once with this Retry-After (seconds).
WAIT_REFUSED_RETRY_AFTER = 5


class AssignmentsView(BerthAPIView):
    """GET /api/v1/nodes/NODE/assignments: each device's reservation now and next, and the node's state.

    For operators and the node's own credential. It carries an ETag; `If-None-Match` with the
    current one answers 304 Not Modified, and with `?wait=SECONDS` (at most 60) waits for a change
    first: the answer comes as soon as the feed differs, else 304 when the wait ends. A waiting
    request holds no database connection (capacity.waits.WATCH). Past the credential's or the
    process's share of waits (capacity.waits.SLOTS) it answers at once, with Retry-After.
    """

    permission_classes = [IsAuthenticated, IsOperatorOrTheNode]
    for_nodes = True

    @extend_schema(
        operation_id="nodes_assignments",
        tags=["nodes"],
        summary="A node's devices with the reservation holding each now and the next one",
        parameters=[
            OpenApiParameter(
                "wait",
                int,
                description=(
                    "With If-None-Match: wait up to this many seconds (0-60) for a change. At most "
                    "2 waits per credential (BERTH_LONG_POLLS_PER_CREDENTIAL) and half a server "
                    "process's threads wait at once; "
                    "past that the answer comes at once, with Retry-After."
                ),
            )
        ],
        responses={
            200: NodeAssignmentsSerializer,
            304: None,
            **errors(401, 403, 404),
        },
    )
    def get(self, request, name):
        wait = _wait_seconds(request.query_params.get("wait"))
        known = request.headers.get("If-None-Match")
        body, tag = assignments(name)
        headers = {}
        if wait and known == tag:
            with SLOTS.holding(request.user.pk) as held:
                if held:
                    body, tag = _wait_for_change(name, known, wait)
                else:
                    # The credential or the process holds its share of waits: the answer comes at
                    # once, and says when to ask again so an agent does not ask in a loop.
                    headers["Retry-After"] = str(WAIT_REFUSED_RETRY_AFTER)
        headers["ETag"] = tag
        if known == tag:
            return Response(status=304, headers=headers)
        return Response(body, headers=headers)


def _wait_for_change(name: str, known: str, wait: int) -> tuple[dict, str]:
    """Return the node's assignments and tag once they differ from `known`, or after `wait` seconds
    (sooner when the process stops)."""
    deadline = time.monotonic() + wait
    with WATCH.watching(name) as moved:
        # Read again once the watch has its baseline: a change since the first read shows here.
        body, tag = assignments(name)
        while tag == known and (remaining := deadline - time.monotonic()) > 0 and not stopping():
            connection.close()  # hold no connection while waiting; the next read opens one
            if SLOTS.wait(moved, remaining):
                moved.clear()
                body, tag = assignments(name)
    return body, tag


def _wait_seconds(raw: str | None) -> int:
    """Return ?wait as whole seconds, 0 to MAX_WAIT_SECONDS; refuse anything else."""
    if raw is None or raw == "":
        return 0
    if not (raw.isascii() and raw.isdigit()) or int(raw) > MAX_WAIT_SECONDS:
        raise CapacityError(
            INVALID_INPUT, f"wait must be a whole number of seconds from 0 to {MAX_WAIT_SECONDS}"
        )
    return int(raw)
