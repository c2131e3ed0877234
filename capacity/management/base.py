"""What the reserve, preview and release commands share.

The commands act as an operator (every tenant's scope) and call the same services as the API; with
--json they print what the API answers. Exit codes: 0 done (a pending reservation is not a
failure), 2 refused (`error: <CODE>: <message>` on stderr, for every service error code),
3 pending or no fit with --fail-on-pending / --fail-if-no-fit, 1 anything unexpected.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.core.management.base import CommandParser

from capacity import services
from capacity.api.inputs import reservation_input

# The booking commands read the command base here too.
from capacity.command import PENDING, REFUSED, BerthCommand, os_user, refused  # noqa: F401
from capacity.placement import INVALID_INPUT
from capacity.placement.fields import PRIORITIES, request_body


def add_request_arguments(parser: CommandParser) -> None:
    """Add the options that describe a request, as the spec's CLI takes them."""
    parser.add_argument("--tenant", required=True, help="Tenant slug, such as acme.")
    parser.add_argument("--pool", required=True, help="Pool slug, such as h100-prod.")
    parser.add_argument("--gpus", type=int, help="How many atoms of --class (whole GPUs by default).")
    parser.add_argument("--class", dest="device_class", default="gpu", help="Device class (default gpu).")
    parser.add_argument("--for", dest="duration", help="How long: 30m, 12h, 3d or 2w.")
    parser.add_argument("--start", help="ISO 8601 start with a time zone (default now, with --for).")
    parser.add_argument("--end", help="ISO 8601 end with a time zone (instead of --for).")
    parser.add_argument("--selector", help='Shorthand, e.g. "gpuProduct in (H100-SXM5-80GB), vramGiB >= 80".')
    parser.add_argument("--nvlink", action="store_true", help="Every GPU picked fully connected by NVLink.")
    parser.add_argument("--vcpu", type=int, help="vCPUs to claim on the node.")
    parser.add_argument("--memory", type=int, help="Memory to claim on the node, in GiB (memoryGiB).")
    parser.add_argument("--gang", type=int, help="Book this many nodes at once, each taking the devices.")
    parser.add_argument("--priority", choices=PRIORITIES, help="regular (default) or spot.")
    parser.add_argument(
        "--whole-node",
        action="store_true",
        help="Lease whole nodes (binding node): every device and all scalar room; no --gpus.",
    )
    parser.add_argument("--topology-key", help="With --gang: every member shares this label's value.")
    parser.add_argument("--idempotency-key", help="Replaying the same key answers the first reservation.")
    parser.add_argument("--json", action="store_true", help="Print the API's JSON.")


def _epoch_ms(text: str, option: str) -> int:
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise refused(
            INVALID_INPUT, f"{option} must be an ISO 8601 time, such as 2026-12-03T09:00Z"
        ) from None
    if parsed.tzinfo is None:
        raise refused(INVALID_INPUT, f"{option} must carry a time zone, such as 2026-12-03T09:00Z")
    return int(parsed.timestamp() * 1000)


def request_from_options(options: dict[str, Any]) -> dict[str, Any]:
    """Return the request body the options describe, in the API's shape."""
    devices = None
    if options.get("gpus"):
        device: dict[str, Any] = {"class": options["device_class"], "count": options["gpus"]}
        if options.get("selector"):
            device["selector"] = options["selector"]
        devices = [device]
    elif options.get("selector"):
        raise refused(INVALID_INPUT, "--selector needs --gpus")
    resources = {
        name: options[option]
        for option, name in (("vcpu", "vcpu"), ("memory", "memoryGiB"))
        if options.get(option) is not None
    }
    start, end, duration = options.get("start"), options.get("end"), options.get("duration")
    if end and duration:
        raise refused(INVALID_INPUT, "give --for or --end, not both")
    if end and not start:
        raise refused(INVALID_INPUT, "--end needs --start")
    during = None
    if start:
        begin = _epoch_ms(start, "--start")
        if end:
            finish = _epoch_ms(end, "--end")
        elif duration:
            reservation_input({"duration": duration})  # a duration too long to represent
            length = services.parse_duration(duration, "--for")
            finish = begin + int(length.total_seconds() * 1000)
        else:
            raise refused(INVALID_INPUT, "--start needs --for or --end")
        during, duration = {"start": begin, "end": finish}, None
    gang = None
    if options.get("gang"):
        gang = {"size": options["gang"]}
        if options.get("topology_key"):
            gang["topologyKey"] = options["topology_key"]
    elif options.get("topology_key"):
        raise refused(INVALID_INPUT, "--topology-key needs --gang")
    data = request_body(
        tenant_id=options["tenant"],
        pool_id=options["pool"],
        devices=devices,
        topology="nvlink-all" if options.get("nvlink") else None,
        resources=resources or None,
        during=during,
        duration=duration,
        gang=gang,
        binding="node" if options.get("whole_node") else None,
        priority=options.get("priority") or None,
        idempotency_key=options.get("idempotency_key") or None,
    )
    return dict(reservation_input(data))


def admission(tenant: str) -> dict[str, str]:
    """The admission context of a booking made from the command line."""
    return services.admission_context(tenant, os_user(), "cli")
