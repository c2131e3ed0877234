from django.apps import AppConfig


class PolicyConfig(AppConfig):
    """The pool's rules, one module each, registered with placement at its named points (capacity.rules);
    its worker job releases bookings no operator approved in time; it draws the quota cards of
    capacity's booking and reservations pages."""

    name = "policy"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from capacity.port import Job, register, register_quota_cards, register_rule, register_section

        from . import (
            approval,
            approvals,
            borrowing,
            lending,
            limits,
            outside_check,
            policy_section,
            quota_cards,
            shares_section,
        )

        # In this order at each point: the limits refuse before approval holds what they let through.
        for module in (limits, approval, outside_check, borrowing, lending):
            for rule in module.RULES:
                register_rule(rule)
        # The pool page draws its settings in this order: Shares, then Policy.
        for module in (shares_section, policy_section):
            register_section(module.SECTION)
        register(Job("approval-expiry", approvals.run_once, approvals.serve))
        register_quota_cards(quota_cards.booking_quota, quota_cards.quota_cards)
