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

A module that books a tenant's recurring time (a course's lab sessions for a term) books a
series: `reserve_series`, the API's `repeat` with the same rule, limits and answer (docs/series.md).
Those are the tenant's reservations, charged to its quota as the API charges them.

The port is also the one surface of capacity its sibling apps (policy, usage, whatif, webhooks,
identity, auditlog, metrics) read: every name they use is in the table below, and the import contract
(tests/test_import_contracts.py) holds them to it. It is a face (config.face): a name loads its own
module when first asked, so an app reaches only the modules of the names it uses
(`python -m devtools.reach` counts them; docs/architecture.md shows the table).
"""

from config.face import lazy_face

FACE = {
    # Booking for another app's instances and a tenant's series (capacity.services.instances).
    "capacity.services.instances": (
        "INSTANCE_LOCK_CLASS",
        "InstanceBooking",
        "release_instance",
        "reserve_for_instance",
        "reserve_series",
    ),
    "capacity.services.series": ("SeriesResult",),
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
    ),
    "capacity.placement.earliest": ("NodeTime",),
    "capacity.placement.freeindex": ("FreeIndex",),
    "capacity.placement.lease": ("plan_lease",),
    "capacity.placement.shares": ("Share", "Verdict", "gpus_phrase", "gpus_text", "judge", "within"),
    "capacity.placement.validate": ("validate_request",),
    # The planner over the database's pool, as placement builds it (what if replays demand on it).
    "capacity.conf": ("placer_config",),
    "capacity.placers.claims": ("WindowUse",),
    "capacity.placers.horizon": ("Horizon", "earliest_in", "horizon_of", "node_times"),
    "capacity.placers.index": ("PoolIndex", "Short", "index_of", "pool_index", "views_for"),
    "capacity.placers.loader": ("Limits", "NodeIndex", "PoolRow", "load_pool"),
    "capacity.placers.planning": ("Planner", "plan_shortlist", "uses_shortlist"),
    "capacity.placers.types": ("PLACERS", "Borrowed", "Outcome", "PlacerConfig"),
    # What a rule that places (NO_ROOM: lending) plans and commits with: placement's own loop.
    "capacity.placers.attempt": ("Way", "attempt", "commit_members"),
    "capacity.placers.commit": ("Committed", "LostRace", "Owner", "member_devices"),
    "capacity.placers.reads": ("plan_reads",),
    "capacity.placers.sql": ("key_in",),
    # Bookings as records, and who may read them.
    "capacity.models": (
        "AnyReservation",
        "MaintenanceWindow",
        "Quota",
        "Reservation",
        "ReservationEvent",
        "Series",
    ),
    # The Slurm bridge holds a hand-made Slurm reservation as a maintenance window on its nodes.
    "capacity.services.maintenance": ("cancel_window", "schedule_window"),
    "capacity.models.reservations": (
        "APPROVED",
        "AWAITING",
        "BORROWED",
        "IDLE",
        "QUEUED_CONDITION",
        "RECLAIMED",
        "preempt_at",
    ),
    "capacity.models.rules": ("switch_rule",),
    "capacity.models.quota": ("DEFAULT_RESOURCE",),
    "capacity.models.rollups": ("GPU_HOUR",),
    "capacity.booked_today": ("BOOKING_KEYS_SQL", "TO_DATE_SQL", "to_date_params"),
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
        "pool_allows",
        "pool_for",
        "scope_for",
        "seen",
    ),
    "capacity.gpu_hours": ("gpu_hours_sql", "gpus_sql"),
    "capacity.db.cursors": ("prepared_cursor",),
    "capacity.db.literals": ("to_datetime", "window_literal", "window_range"),
    "capacity.render": ("ReservationSerializer", "node_detail", "render_reservation", "render_reservations"),
    "capacity.views.common": ("visible_pool",),
    # Use cases another app runs: the idle check releases, reads pool policies, names atoms.
    "capacity.services.atoms": ("atoms_text",),
    "capacity.services.inputs": ("MAX_DURATION", "duration_text", "epoch_ms", "parse_day", "parse_duration"),
    # The pool rules' pages and API (policy.views, policy.api) decide held bookings, set policies and shares.
    "capacity.services.reservations": ("awaiting", "get"),
    "capacity.services.release": ("MAX_REASON", "release"),
    # A pool's policy as booking reads it; the policy app (policy.models, policy.pool_policy) writes it.
    "capacity.services.pool_policy": (
        "APPROVAL_HOLD",
        "ATTRS",
        "Policy",
        "defaults",
        "policy_of",
        "stored_policies",
    ),
    # What policy.shares reads a pool's share rows with: each tenant's decayed use and fair share.
    "capacity.placement.fairshare": ("decayed_gpu_hours", "fair_share"),
    "capacity.services.reclaim": ("lending_since",),
    # The pool page's settings sections the pool's rules draw (Shares, Policy), and the quota cards
    # policy draws on the booking and reservations pages.
    "capacity.views.pool_sections": ("Section", "register_section"),
    "capacity.views.quota_cards": ("register_quota_cards",),
    # Where apps plug in: the pool rules (policy), the worker's jobs, usage's answers, the commands' base.
    "capacity.rules": ("Booking", "NoRoom", "Pending", "Rule", "register_rule"),
    # What a pool rule reads: the tenant's quota lock, the held-thread slots, the check's deadline;
    # the quota report (policy.quota_report) reads a tenant's peak use as the lock's reads count it.
    "capacity.db.channels": ("QUOTA_LOCK_CLASS",),
    "capacity.placers.quota": ("LOCK_SQL", "QUOTA_EXCEEDED_REASON", "Use", "report"),
    "capacity.waits": ("CHECKS_PER_TENANT", "SLOTS", "TENANT_BOUND"),
    "capacity.worker_jobs": ("LOST_DATABASE", "Job", "register", "survive"),
    "capacity.checks": ("register_check",),
    # The directory every process shares its counters in (the Slurm bridge counts its passes there too).
    "capacity.services": ("usage_hooks",),
    "capacity.management.command": ("BerthCommand",),
    # What booking tells its observers (the metrics app counts it); pools' capacity now (its gauges),
    # and what policy.shares counts a pool's bookable GPUs with.
    "capacity.observe": ("EVENTS", "register_observer", "tell"),
    "capacity.rollups": ("BUCKETS", "capacity_by_pool", "stored_rollups"),
}

lazy_face(__name__, FACE)
