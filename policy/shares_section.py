"""The pool page's Shares section: every row and an edit form for operators, a tenant's own row.

A section of capacity's pool page (capacity.views.pool_sections), registered by policy/apps.py.
"""

from __future__ import annotations

from django import forms
from django.http import HttpRequest
from django.template.loader import render_to_string

from capacity.port import (
    CapacityError,
    Section,
    may_set_shares,
    scope_for,
)
from inventory.models import Tenant

from .quotas import lacking_gpu_quota
from .share_verdict import gpus_text
from .shares import bookable_gpus, delete_share, holding_changes_at, pool_shares, set_share

# Where the kept Shares section reads, per page, which teams with a share have no GPU quota: a quota
# set on the team page changes nothing the kept fragment's key follows.
NO_QUOTA_PLACEHOLDER = "berth-share-no-quota-placeholder-7c2b"


class ShareForm(forms.Form):
    """A tenant's share of a pool, as the API's PUT takes it; blank limits mean none."""

    tenant = forms.ModelChoiceField(Tenant.objects.order_by("slug"), to_field_name="slug")
    guaranteed = forms.IntegerField(label="Guaranteed GPUs", min_value=0, max_value=10**9)
    borrowing = forms.IntegerField(
        label="Borrowing limit", min_value=0, max_value=10**9, required=False, help_text="blank: no limit"
    )
    lending = forms.IntegerField(
        label="Lending limit", min_value=0, max_value=10**9, required=False, help_text="blank: all"
    )


def shares_context(
    request: HttpRequest, pool, form: ShareForm | None = None, error: str = "", placeholder: str = ""
) -> dict:
    """Return what the Shares section draws: the rows the user may read and, for operators, the form.

    The pool was checked by the caller (visible_pool). A tenant's team without a row in a pool with
    shares is told it is guaranteed 0, never whose rows exist.
    """
    scope = scope_for(request.user)
    rows, has_shares = pool_shares(scope, pool)
    context = {
        "pool": pool,
        "share_rows": rows,
        "pool_has_shares": has_shares,
        "share_own_missing": not scope.sees_every_tenant and not rows,
        "share_error": error,
    }
    if may_set_shares(request.user):
        context["share_form"] = form or ShareForm(prefix="share")
        context["bookable_gpus"] = gpus_text(float(bookable_gpus(pool)))
        if not has_shares:
            context["no_quota"] = []  # no team has a share to lack quota for: nothing to read per page
        elif placeholder:
            context["no_quota_placeholder"] = placeholder
        else:
            context["no_quota"] = teams_without_quota(pool)
    return context


def teams_without_quota(pool) -> list[str]:
    """Return the slugs of the teams with a share of the pool and no GPU quota (their bookings are refused)."""
    teams = lacking_gpu_quota(Tenant.objects.filter(pool_shares__pool=pool))
    return list(teams.order_by("slug").values_list("slug", flat=True).distinct())  # one statement


def no_quota_warning(request: HttpRequest, pool) -> str:
    """Draw the warning for the teams with a share and no GPU quota, read fresh for each page (operators)."""
    if not may_set_shares(request.user):
        return ""
    return render_to_string(
        "capacity/pool_detail.html#share-no-quota", {"no_quota": teams_without_quota(pool)}, request
    )


def apply_share(request: HttpRequest, pool) -> tuple[ShareForm | None, str]:
    """Set or (with `delete`) remove the posted tenant's share.

    Return (None, "") when done, else the form to show again and what went wrong outside its fields.
    """
    if request.POST.get("delete"):
        try:
            delete_share(pool.slug, request.POST.get("share-tenant", ""))
            return None, ""
        except CapacityError as err:
            return ShareForm(prefix="share"), err.message
    form = ShareForm(request.POST, prefix="share")
    if not form.is_valid():
        return form, ""
    data = form.cleaned_data
    try:
        set_share(pool.slug, data["tenant"].slug, data["guaranteed"], data["borrowing"], data["lending"])
    except CapacityError as err:
        return form, err.message
    return None, ""


def holding_changes(pool, now, context: dict):
    """Return when what tenants hold changes as bookings start and end; fair shares decay (the cap)."""
    return holding_changes_at(pool, now) if context["share_rows"] else None


def _context(request: HttpRequest, pool, form: ShareForm | None, error: str, placeholder: str) -> dict:
    return shares_context(request, pool, form, error, placeholder)


SECTION = Section(
    "shares",
    context=_context,
    apply=apply_share,
    placeholder=NO_QUOTA_PLACEHOLDER,
    fresh=no_quota_warning,
    changes_at=holding_changes,
)
