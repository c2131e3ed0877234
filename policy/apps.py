from django.apps import AppConfig


class PolicyConfig(AppConfig):
    """The pool's rules, one module each, registered with placement at its named points (capacity.rules);
    its worker job releases bookings no operator approved in time, its steps in the worker's round
    end spot work whose notice ran out and take lent GPUs back; it draws the quota cards of
    capacity's booking and reservations pages and answers a reservation's PATCH (keepWhenIdle)."""

    name = "policy"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from capacity.port import (
            AFTER_EXPIRY,
            BEFORE_EXPIRY,
            Job,
            register,
            register_queue,
            register_quota_cards,
            register_reservation_methods,
            register_rule,
            register_section,
            register_step,
        )

        from . import (
            approval,
            approvals,
            borrowing,
            fair_queue,
            keep_when_idle,
            lending,
            limits,
            notice,
            outside_check,
            policy_section,
            quota_cards,
            reclaim,
            reclaim_processes,
            shares_section,
        )
        from .api import keep_when_idle as keep_when_idle_api

        # In this order at each point: the limits refuse before approval holds what they let through.
        for module in (
            limits,
            keep_when_idle,
            approval,
            outside_check,
            borrowing,
            lending,
            notice,
            reclaim,
            reclaim_processes,
        ):
            for rule in module.RULES:
                register_rule(rule)
        # A pool with shares tries its pending work in fair order (capacity's queue hook).
        register_queue(fair_queue.QUEUE)
        # The pool page draws its settings in this order: Shares, then Policy.
        for module in (shares_section, policy_section):
            register_section(module.SECTION)
        register(Job("approval-expiry", approvals.run_once, approvals.serve))
        # In the worker's round: notices run out before ended windows are released, reclaims after.
        register_step(BEFORE_EXPIRY, "notice-expiry", reclaim.expire_notices)
        register_step(AFTER_EXPIRY, "reclaim-processes", reclaim_processes.reclaim_for_processes)
        register_step(AFTER_EXPIRY, "reclaim-lapsed", reclaim.reclaim_lapsed)
        register_quota_cards(quota_cards.booking_quota, quota_cards.quota_cards)
        # One reservation's PATCH (keepWhenIdle), on capacity's endpoint of it.
        register_reservation_methods(keep_when_idle_api.KeepWhenIdleMethods)
