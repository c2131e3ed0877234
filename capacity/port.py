"""The capacity port: how other Django apps book capacity, the way the VPS module books for instances.

    from capacity import port
    booking = port.reserve_for_instance(
        instance_id="vm-42", tenant="acme", pool="a100-mig",
        devices=[{"class": "mig-1g.10gb", "count": 1}], resources={"vcpu": 4},
        duration="1d", node_labels={"bc.dev/driver.kata": "*"}, admission={"identityKind": "user"},
    )

Instances always place inline and answer at once. Placement never charges quota: the calling app
decides what its instances may hold. The instance id is the idempotency key: while an instance holds
a live allocation, asking again answers that booking and books nothing (a module that retries
cannot double-allocate an instance). Capability labels are the module's to set (`node_labels`);
capacity adds none to instance requests.

A module that books a tenant's recurring time (a course's lab sessions for a term) books a series
through the series app (`series.port.reserve_series`, docs/series.md), which books through here.

The port is also the one surface of capacity its sibling apps (policy, usage, whatif, webhooks,
identity, auditlog, metrics, series, maintenance, agents) read: every name they use is in the table
below, and the import contract (tests/test_import_contracts.py) holds them to it. It is a face
(config.face): a name loads its own module when first asked, so an app reaches only the modules of
the names it uses (`python -m devtools.reach` counts them; docs/architecture.md shows the table).
"""

from config.face import lazy_face

FACE = {
    # Booking for another app's instances (capacity.services.instances).
    "capacity.services.instances": (
        "INSTANCE_LOCK_CLASS",
        "InstanceBooking",
        "release_instance",
        "reserve_for_instance",
    ),
    # What the series app books each occurrence with: a create's own steps, prepared once, placed
    # inline (capacity.services.prepare, reserve, placing), and releases a series with.
    "capacity.services.prepare": ("Prepared", "prepare"),
    "capacity.services.reserve": (
        "admission_context",
        "consult_outside",
        "insert_routed",
        "place_routed",
        "reservation_fields",
        "route",
    ),
    "capacity.services.placing": ("set_pending",),
    "capacity.placement.errors": ("IDEMPOTENCY_CONFLICT", "IDEMPOTENCY_IN_FLIGHT"),
    # A series' rule is part of the create's one declaration; the API's input schema and the booking
    # form the series' pages and answers reuse; where a series meets capacity's interfaces.
    "capacity.placement.fields": (
        "DAYS",
        "FREQS",
        "MAX_EPOCH_MS",
        "MAX_INTERVAL",
        "MAX_OCCURRENCES",
        "MAX_SPAN_DAYS",
        "request_body",
    ),
    "capacity.api.inputs": ("RepeatSerializer", "ReservationInputSerializer"),
    "capacity.series_hooks": ("answer_series",),
    # The pure core: errors, requests and plans, and the searches what if replays.
    "capacity.placement": (
        "ARCHIVED_REASON",
        "BUILTIN_SCORERS",
        "CONFLICT",
        "DEDICATED_PREFIX",
        "EMPTY_POOL_REASON",
        "FORBIDDEN",
        "INVALID_INPUT",
        "NOT_FOUND",
        "POLICY_LIMIT",
        "QUOTA_EXCEEDED",
        "CapacityError",
        "DeviceRequest",
        "Gang",
        "NodeView",
        "PlacementRequest",
        "Plan",
        "Pool",
        "Ranked",
        "Window",
        "ineligibility",
        "may_be_schedulable",
        "run_admit",
    ),
    "capacity.placement.earliest": ("NodeTime",),
    "capacity.placement.freeindex": ("FreeIndex",),
    "capacity.placement.lease": ("plan_lease",),
    "capacity.placement.validate": ("validate_request",),
    # The planner over the database's pool, as placement builds it (what if replays demand on it).
    "capacity.conf": ("placer_config",),
    "capacity.placers.claims": ("WindowUse",),
    "capacity.placers.horizon": ("Horizon", "earliest_in", "horizon_of", "node_times"),
    "capacity.placers.index": ("PoolIndex", "Short", "index_of", "pool_index", "views_for"),
    "capacity.placers.loader": ("Limits", "NodeIndex", "PoolRow", "load_pool"),
    "capacity.placers.planning": ("Planner", "plan_shortlist", "uses_shortlist"),
    "capacity.placers.types": ("INLINE", "PLACERS", "Borrowed", "Outcome", "PlacerConfig"),
    # What a rule that places (NO_ROOM: lending) plans and commits with: placement's own loop.
    "capacity.placers.attempt": ("Way", "attempt", "commit_members"),
    "capacity.placers.commit": ("Committed", "LostRace", "Owner", "member_devices"),
    "capacity.placers.reads": ("plan_reads",),
    "capacity.placers.sql": ("key_in",),
    # Bookings as records, and who may read them.
    "capacity.models": (
        "Allocation",
        "AnyReservation",
        "MaintenanceWindow",
        "MaintenanceWindowNode",
        "Quota",
        "Reservation",
        "ReservationEvent",
        "Series",
    ),
    # What the maintenance app's windows and drain move bookings with (capacity's repair),
    # the condition they tell bookings by and the words of the window's span (the placement core's).
    "capacity.services.repair": ("register_repair_condition", "repair_reservation", "wake_worker"),
    "capacity.placement.maintenance": ("stamp",),
    "capacity.models.reservations": (
        "APPROVED",
        "AWAITING",
        "BORROWED",
        "IDLE",
        "PREEMPTED_CONDITION",
        "PREEMPT_AT",
        "MAINTENANCE_SCHEDULED",
        "QUEUED_CONDITION",
        "RECLAIMED",
        "preempt_at",
    ),
    "capacity.models.rules": ("switch_rule",),
    "capacity.models.quota": ("DEFAULT_RESOURCE",),
    "capacity.access": (
        "EVERYONE",
        "Scope",
        "feed_scope",
        "is_operator",
        "may_approve",
        "may_manage_teams",
        "may_set_policy",
        "may_set_shares",
        "may_watch_nodes",
        # Who a node credential is, and what it may call (agents.permissions, agents.report).
        "node_call_refusal",
        "node_of",
        "nodes_for",
        "pool_allows",
        "pool_for",
        "redact",
        "scope_for",
        "seen",
        "visible_pool",
    ),
    "capacity.gpu_hours": ("SEVENTHS", "gpu_hours_sql", "gpus_sql"),
    "capacity.db.cursors": ("prepared_cursor",),
    "capacity.db.literals": ("to_datetime", "window_literal", "window_range"),
    "capacity.db.retry": ("retry_on_conflict",),
    "capacity.render": ("ReservationSerializer", "node_detail", "render_reservation", "render_reservations"),
    "capacity.views.common": ("visible_node",),
    # Taking a node out of service (the maintenance app's cordon, uncordon, maintenance mode and
    # drain): capacity's node actions' API base and schema, and the node page's drain form.
    "capacity.api.nodes": (
        "OperatorView",
        "action_body",
        "action_schema",
        "body_text",
        "reason",
    ),
    "capacity.forms": ("DrainForm",),
    # The maintenance windows' panel on the pool and node pages, the pages that answer its forms and
    # the pool's chart it redraws.
    "capacity.views.pools": ("pool_page",),
    "capacity.views.nodes": ("node_page",),
    "capacity.views.availability_chart": ("pool_charts",),
    # Use cases another app runs: the idle check releases, reads pool policies, names atoms.
    "capacity.services.atoms": ("atoms_text",),
    "capacity.services.inputs": (
        "MAX_DURATION",
        "START_GRACE",
        "duration_text",
        "epoch_ms",
        "parse_day",
        "parse_duration",
    ),
    # The pool rules' pages and API (policy.views, policy.api) decide held bookings, set policies and shares.
    "capacity.services.reservations": ("awaiting", "get", "lent_notices"),
    "capacity.services.release": ("MAX_REASON", "release", "release_together"),
    # A pool's policy as booking reads it; the policy app (policy.models, policy.pool_policy) writes it.
    "capacity.services.pool_policy": (
        "APPROVAL_HOLD",
        "ATTRS",
        "Policy",
        "defaults",
        "policy_of",
        "stored_policies",
    ),
    # What the notice and reclaim rules (policy.notice, policy.reclaim) take work back with.
    "capacity.placers.take_back": ("take_back",),
    "capacity.placers.ending": ("end_allocations",),
    # The pool page's settings sections the pool's rules draw (Shares, Policy), and the quota cards
    # policy draws on the booking and reservations pages.
    "capacity.views.pool_sections": (
        "Panel",
        "Section",
        "register_panel",
        "register_quota_cards",
        "register_section",
    ),
    # One reservation's PATCH (keepWhenIdle, policy.api.keep_when_idle) on capacity's endpoint, and the
    # reservation page the page's button (policy.views) answers with when it refuses.
    "capacity.api.views": ("register_reservation_methods",),
    "capacity.views.reservations": ("reservation_detail",),
    # Where apps plug in: the pool rules (policy), the worker's jobs, usage's answers, the commands' base;
    # a node's report (agents.report) runs the REPORTED rules once committed.
    "capacity.rules": (
        "STARTS_LATER",
        "Booking",
        "Figures",
        "NoRoom",
        "Notice",
        "Pending",
        "Queue",
        "Rule",
        "before_lock",
        "queue_places",
        "register_queue",
        "register_rule",
        "reported",
    ),
    # What the fair queue (policy.fair_queue) leaves out of a queue: work no node could ever take.
    "capacity.placement.satisfiable": ("UNSATISFIABLE",),
    # What a pool rule reads: the tenant's quota lock, the held-thread slots, the check's deadline;
    # the quota report (policy.quota_report) reads a tenant's peak use as the lock's reads count it.
    "capacity.db.channels": ("QUOTA_LOCK_CLASS",),
    "capacity.placers.quota": ("LOCK_SQL", "QUOTA_EXCEEDED_REASON", "Use", "refund", "report"),
    # An agent's long-poll (agents.api) holds a slot too, and waits on the node watch until the process stops.
    "capacity.waits": ("CHECKS_PER_TENANT", "SLOTS", "TENANT_BOUND", "WATCH", "stopping"),
    "capacity.worker_jobs": (
        "AFTER_EXPIRY",
        "BEFORE_EXPIRY",
        "BEFORE_REPAIR",
        "LOST_DATABASE",
        "Job",
        "register",
        "register_step",
        "survive",
    ),
    "capacity.checks": ("register_check", "register_drift"),
    "capacity.services": ("usage_hooks",),
    "capacity.command": ("PENDING", "BerthCommand", "refused"),
    # What booking tells its observers (the metrics app counts it); pools' capacity now (its gauges),
    # and what policy.shares counts a pool's bookable GPUs with.
    "capacity.observe": ("EVENTS", "register_observer", "tell"),
    "capacity.rollups": ("BUCKETS", "capacity_by_pool", "stored_rollups"),
}

lazy_face(__name__, FACE)
