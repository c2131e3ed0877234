"""The pool page's Policy section: the pool's policy for everyone who may use it, a form for operators.

A section of capacity's pool page (capacity.views.pool_sections), registered by policy/apps.py.
"""

from __future__ import annotations

from datetime import timedelta

from django import forms
from django.http import HttpRequest
from django.template.loader import render_to_string
from django.utils import timezone

from capacity.port import (
    IDLE,
    CapacityError,
    Policy,
    Reservation,
    Section,
    may_set_policy,
    policy_of,
)

from .pool_policy import SECRET, parse_policy, policy_body, put_body
from .reclaim import lending_since

# Where a kept Policy section has the operator's list of bookings kept when idle (read per page).
KEPT_PLACEHOLDER = "berth-kept-when-idle-placeholder-5d1e"

DURATION_HELP = "30m, 2h, 3d or 2w; blank: off"


class PolicyForm(forms.Form):
    """A pool's policy as the API's PUT takes it: durations as text (blank: off), switches."""

    idleWarnAfter = forms.CharField(label="Warn when idle for", required=False, help_text=DURATION_HELP)
    idleReleaseAfter = forms.CharField(
        label="Release when still idle after", required=False, help_text=DURATION_HELP
    )
    allowKeepWhenIdle = forms.BooleanField(label="Owners may keep idle bookings", required=False)
    lendIdle = forms.BooleanField(
        label="Lend idle GPUs to spot work",
        required=False,
        help_text="spot work may run on them; they come back when the owner's processes return",
    )
    spotNotice = forms.CharField(label="Spot notice", required=False, help_text=DURATION_HELP)
    spotMinRuntime = forms.CharField(label="Spot minimum runtime", required=False, help_text=DURATION_HELP)
    maxDuration = forms.CharField(
        label="Longest booking", required=False, help_text=DURATION_HELP.replace("off", "no limit")
    )
    maxLeadTime = forms.CharField(
        label="Furthest start ahead", required=False, help_text=DURATION_HELP.replace("off", "no limit")
    )
    maxFutureGpuHours = forms.IntegerField(
        label="GPU-hours a tenant may hold ahead",
        required=False,
        min_value=1,
        help_text="whole-GPU-hours of its bookings not yet ended (a MIG slice its share); blank: no limit",
    )
    approvalAboveGpuHours = forms.IntegerField(
        label="Approval above GPU-hours",
        required=False,
        min_value=1,
        help_text="a larger booking is placed but waits for an operator (Approvals page); blank: none needed",
    )
    approvalHold = forms.CharField(
        label="Release unapproved after", required=False, help_text="30m, 2h, 3d or 2w; blank: 24h"
    )
    policyWebhook = forms.CharField(
        label="Outside check URL",
        required=False,
        help_text="asked on every create, 2 s; 403 refuses (its secret is shown once, when first set); blank: none",
    )
    policyWebhookOnError = forms.ChoiceField(
        label="When the check fails",
        required=False,
        choices=[("deny", "deny the booking"), ("allow", "allow the booking")],
    )
    policyWebhookConcurrency = forms.IntegerField(
        label="Checks at once",
        required=False,
        min_value=1,
        max_value=1000,
        help_text="the most bookings waiting on the check at once (per web process); blank: no cap",
    )


def policy_initial(policy: Policy) -> dict:
    """Return the form's initial values: the policy as the API writes it, off as blank."""
    return {name: ("" if value is None else value) for name, value in policy_body(policy).items()}


def kept_reservations(pool) -> list[Reservation]:
    """Return the pool's live bookings whose owners opted out of the idle release, idle ones first."""
    rows = list(
        Reservation.objects.filter(pool=pool, keep_when_idle=True, status__in=["placed", "pending"])
        .select_related("tenant")
        .order_by("starts_at", "id")[:50]
    )
    for r in rows:
        r.idle_message = (r.condition(IDLE) or {}).get("message", "")
    return sorted(rows, key=lambda r: not r.idle_message)


def policy_context(
    request: HttpRequest, pool, form: PolicyForm | None = None, error: str = "", kept_placeholder: str = ""
) -> dict:
    """Return what the Policy section draws; operators get the form and who keeps idle bookings.

    The pool was checked by the caller (visible_pool). With `kept_placeholder`, the list of kept
    bookings is not read: the placeholder stands in its place (the pool page puts a fresh list there).
    """
    policy = policy_of(pool)
    context = {
        "pool": pool,
        "policy": policy,
        "policy_body": policy_body(policy),
        "policy_error": error,
    }
    if policy.lend_idle:
        # GPU-hours lent and reclaims this week: read only for a pool that lends.
        now = timezone.now()
        context["lent_week"] = lending_since(pool.pk, now - timedelta(days=7), now)
    if may_set_policy(request.user):
        shown = request.session.pop("policy_secret", None) if hasattr(request, "session") else None
        if shown and shown[0] == pool.slug:
            context["policy_secret"] = shown[1]
        context["policy_form"] = form or PolicyForm(prefix="policy", initial=policy_initial(policy))
        if kept_placeholder:
            context["kept_placeholder"] = kept_placeholder
        else:
            context["kept_reservations"] = kept_reservations(pool)
    return context


def apply_policy(request: HttpRequest, pool) -> tuple[PolicyForm | None, str]:
    """Change the pool's policy from the posted form; (None, "") when done, else the form and the error.

    The form is read as the API's PUT (policy.pool_policy.parse_policy): an error naming a field
    is shown next to it.
    """
    form = PolicyForm(request.POST, prefix="policy")
    if not form.is_valid():
        return form, ""
    data = {k: (v.strip() or None) if isinstance(v, str) else v for k, v in form.cleaned_data.items()}
    # The hold cannot be off: blank is the default; a form without the switch leaves it as it is.
    data["approvalHold"] = data.get("approvalHold") or "24h"
    if data.get("policyWebhookOnError") is None:
        data.pop("policyWebhookOnError", None)
    try:
        body = put_body(pool.slug, parse_policy(data))
    except CapacityError as err:
        field = err.message.split(" ", 1)[0].rstrip(":")
        if field in form.fields:
            form.add_error(field, err.message)
            return form, ""
        return form, err.message
    if SECRET in body:
        # Shown once, as the API's PUT shows it: the receiver needs it to verify the calls.
        request.session["policy_secret"] = (pool.slug, body[SECRET])
    return None, ""


def kept_list(request: HttpRequest, pool) -> str:
    """Draw the operator's bookings kept when idle, read fresh for each page."""
    return render_to_string(
        "capacity/pool_detail.html#kept-list", {"kept_reservations": kept_reservations(pool)}, request
    )


def shows_secret(request: HttpRequest, pool) -> bool:
    """Return whether the page shows this reader the outside check's secret, once."""
    secret = getattr(request, "session", {}).get("policy_secret")
    return bool(secret and secret[0] == pool.slug)


SECTION = Section(
    "policy",
    context=policy_context,
    apply=apply_policy,
    placeholder=KEPT_PLACEHOLDER,
    fresh=kept_list,
    own=shows_secret,
)
