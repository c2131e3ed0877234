from django.apps import AppConfig


class PolicyConfig(AppConfig):
    """The pool's rules, one module each, registered with placement at its named points (capacity.rules);
    its worker job releases bookings no operator approved in time."""

    name = "policy"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from capacity.port import Job, register, register_queue, register_rule, register_section

        from . import (
            approval,
            approvals,
            borrowing,
            fair_queue,
            lending,
            limits,
            outside_check,
            policy_section,
            shares_section,
        )

        # In this order at each point: the limits refuse before approval holds what they let through.
        for module in (limits, approval, outside_check, borrowing, lending):
            for rule in module.RULES:
                register_rule(rule)
        # A pool with shares tries its pending work in fair order (capacity's queue hook).
        register_queue(fair_queue.QUEUE)
        # The pool page draws its settings in this order: Shares, then Policy.
        for module in (shares_section, policy_section):
            register_section(module.SECTION)
        register(Job("approval-expiry", approvals.run_once, approvals.serve))
