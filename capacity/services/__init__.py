"""The one way into capacity for views, the API, the CLI, the port and the worker: names only.

Each use case lives in a module of its own (prepare, reserve, placing, release, preview, earliest_start,
hints, repair, drain, ...); this face gathers the names callers use.
"""

from capacity.access import (
    EVERYONE,
    Scope,
    may_read_node,
    nodes_for,
    pool_allows,
    pools_for,
    redact,
    redacted_conditions,
    sees_tenant,
    visible_reservations,
)
from capacity.models.reservations import IDLE, QUEUED_MESSAGE, UNSCHEDULABLE
from capacity.placers.ending import end_allocations
from capacity.placers.notice import STARTS_LATER, preempt_at
from capacity.placers.shares import BORROWED

from .approvals import approval_queue, approve, awaiting, deny, release_unapproved
from .fair_queue import fair_shares, queue_body, queue_places, queue_text
from .inputs import normalize, parse_duration, stored_input, stored_request
from .preview import MAX_PREVIEW_CANDIDATES, Preview, preview
from .quota_report import QUOTA_REPORT_WINDOW, quota_report
from .reclaim import count_lent_hours, reclaim, reclaim_lapsed
from .reclaim_processes import reclaim_after_report, reclaim_for_processes
from .release import expire_ended, release, retry_pending
from .reservations import allocations_for, allocations_of, get, list_reservations
from .reserve import ReserveResult, admission_context, reserve
from .satisfiable import UNSATISFIABLE
from .series import (
    SeriesNotPlaced,
    SeriesResult,
    get_series,
    occurrences_of,
    prepare_series,
    release_series,
    reserve_series,
)
from .usage_hooks import usage_for, usage_series
from .waiting import await_placer, is_queued
