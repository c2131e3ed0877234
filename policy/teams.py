"""The team pages (docs/browser.md, Teams): operators create teams and set their members, quotas and shares.

Operators only, SSO operators too (no admin needed); a tenant gets 403. Each form answers with its
section (htmx) or the page, its errors next to their fields and nothing written; the writes go
through the services (inventory.teams, capacity's quotas and shares through the port), which record
each change in the audit.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.db.models import Count, Q
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect

from capacity.port import (
    CapacityError,
    may_manage_teams,
)
from config.web import login_required, page, wants_partial
from inventory.errors import InventoryError
from inventory.models import Tenant
from inventory.teams import add_member, create_team, remove_member, rename_team

from .models import PoolShare
from .quotas import delete_quota, quota_rows, set_quota, without_gpu_quota
from .shares import delete_share, set_share
from .team_forms import MemberForm, NameForm, QuotaForm, TeamForm, TeamShareForm, attach

TEMPLATE = "policy/team.html"
OPERATORS_GROUP = "operators"  # capacity.access.OPERATORS_GROUP


def _operator(request: HttpRequest) -> None:
    if not may_manage_teams(request.user):
        raise PermissionDenied("only operators manage teams")


@require_http_methods(["GET", "POST"])
@login_required
def teams(request: HttpRequest) -> HttpResponse:
    """List the teams with their members, quotas and shares counted; create one."""
    _operator(request)
    form = TeamForm(request.POST or None)
    error, status = "", 200
    if request.method == "POST":
        if form.is_valid():
            try:
                tenant = create_team(form.cleaned_data["slug"], form.cleaned_data["name"])
            except InventoryError as err:
                error = attach(form, err.message)
            else:
                url = reverse("team", args=[tenant.slug])
                return HttpResponseClientRedirect(url) if wants_partial(request) else redirect(url)
        status = 200 if wants_partial(request) else 400  # htmx swaps nothing on a 4xx
    rows = list(
        Tenant.objects.annotate(
            member_count=Count("users", distinct=True),
            quota_count=Count("quotas", distinct=True),
            share_count=Count("pool_shares", distinct=True),
        ).order_by("slug")
    )
    lacking = without_gpu_quota([t.pk for t in rows])
    for row in rows:
        row.no_gpu_quota = row.pk in lacking
    return page(
        request,
        "policy/teams.html",
        {"nav": "teams", "rows": rows, "form": form, "error": error},
        partial="new-team",
        status=status,
    )


def _tenant(slug: str) -> Tenant:
    tenant = Tenant.objects.filter(slug=slug).first()
    if tenant is None:
        raise Http404(f"no team {slug}")
    return tenant


def _members(tenant: Tenant) -> list:
    users = list(
        get_user_model()
        .objects.filter(tenants=tenant)
        .annotate(
            sso=Count("provider_identity"),
            operator_group=Count("groups", filter=Q(groups__name=OPERATORS_GROUP)),
        )
        .order_by("username")
    )
    for user in users:
        user.runs_fleet = user.is_staff or bool(user.operator_group)
    return users


def _context(request: HttpRequest, tenant: Tenant, **given) -> dict:
    shares = list(PoolShare.objects.filter(tenant=tenant).select_related("pool").order_by("pool__slug"))
    quotas = quota_rows(tenant.slug)
    guaranteed = sum(s.guaranteed_gpus for s in shares)
    lacking = tenant.pk in without_gpu_quota([tenant.pk])
    # Offered while the team cannot book: a GPU limit of its guarantees.
    quota_form = given.pop("quota_form", None) or QuotaForm(
        prefix="quota", initial={"resource": "gpu", "limit": (guaranteed or None) if lacking else None}
    )
    return {
        "nav": "teams",
        "team": tenant,
        "members": _members(tenant),
        "quotas": quotas,
        "shares": shares,
        "no_gpu_quota": lacking,
        "guaranteed": guaranteed,
        "member_form": given.pop("member_form", None) or MemberForm(prefix="member"),
        "name_form": given.pop("name_form", None) or NameForm(prefix="team", initial={"name": tenant.name}),
        "quota_form": quota_form,
        "share_form": given.pop("share_form", None) or TeamShareForm(prefix="share"),
        **given,
    }


@require_http_methods(["GET"])
@login_required
def team(request: HttpRequest, slug: str) -> HttpResponse:
    """Show one team: its members, its quota and its shares, each with its form."""
    _operator(request)
    return page(request, TEMPLATE, _context(request, _tenant(slug)))


def _answer(request: HttpRequest, tenant: Tenant, section: str, failed: bool, **given) -> HttpResponse:
    """Answer a section's form: its section (htmx) or the page (a failure: 400); a failure wrote nothing."""
    if not failed and not wants_partial(request):
        return redirect(reverse("team", args=[tenant.slug]) + (f"#{section}" if section else ""))
    # The quota's warning sits beside the shares: a share or a quota changes both sections.
    partial = "settings" if section in ("quotas", "shares") else section or None
    # htmx swaps nothing on a 4xx: its section comes back with the errors as a 200.
    status = 400 if failed and not wants_partial(request) else 200
    return page(request, TEMPLATE, _context(request, tenant, **given), partial=partial, status=status)


@require_POST
@login_required
def team_members(request: HttpRequest, slug: str) -> HttpResponse:
    """Add a member (`member-user`) or take one out (`remove`: the username)."""
    _operator(request)
    tenant = _tenant(slug)
    form, error = MemberForm(request.POST, prefix="member"), ""
    try:
        if "remove" in request.POST:
            form = MemberForm(prefix="member")
            remove_member(tenant.slug, request.POST["remove"])
        elif form.is_valid():
            add_member(tenant.slug, form.cleaned_data["user"])
            form = MemberForm(prefix="member")  # done: an empty field for the next one
    except InventoryError as err:
        error = attach(form, err.message)
    failed = bool(error or form.errors)
    return _answer(request, tenant, "members", failed, member_form=form, member_error=error)


@require_POST
@login_required
def team_quotas(request: HttpRequest, slug: str) -> HttpResponse:
    """Set a quota row (`quota-resource`, `quota-limit`) or remove one (`delete`: the resource)."""
    _operator(request)
    tenant = _tenant(slug)
    form, error = QuotaForm(request.POST, prefix="quota"), ""
    try:
        if "delete" in request.POST:
            form = None
            delete_quota(tenant.slug, request.POST["delete"])
        elif form.is_valid():
            set_quota(tenant.slug, form.cleaned_data["resource"], form.cleaned_data["limit"])
            form = None
    except CapacityError as err:
        form = form or QuotaForm(prefix="quota")
        error = attach(form, err.message)
    failed = bool(error or (form is not None and form.errors))
    return _answer(request, tenant, "quotas", failed, quota_form=form, quota_error=error)


@require_POST
@login_required
def team_shares(request: HttpRequest, slug: str) -> HttpResponse:
    """Set the team's share of a pool (`share-pool`, figures) or remove one (`delete`: the pool)."""
    _operator(request)
    tenant = _tenant(slug)
    form, error = TeamShareForm(request.POST, prefix="share"), ""
    try:
        if "delete" in request.POST:
            form = TeamShareForm(prefix="share")
            delete_share(request.POST["delete"], tenant.slug)
        elif form.is_valid():
            data = form.cleaned_data
            set_share(data["pool"].slug, tenant.slug, data["guaranteed"], data["borrowing"], data["lending"])
            form = TeamShareForm(prefix="share")
    except CapacityError as err:
        error = attach(form, err.message)
    failed = bool(error or form.errors)
    return _answer(request, tenant, "shares", failed, share_form=form, share_error=error)


@require_POST
@login_required
def team_name(request: HttpRequest, slug: str) -> HttpResponse:
    """Rename the team (`team-name`); its slug stays."""
    _operator(request)
    tenant = _tenant(slug)
    form, error = NameForm(request.POST, prefix="team"), ""
    if form.is_valid():
        try:
            tenant = rename_team(tenant.slug, form.cleaned_data["name"])
            form = None
        except InventoryError as err:
            error = attach(form, err.message)
    failed = bool(error or (form is not None and form.errors))
    return _answer(request, tenant, "", failed, name_form=form, name_error=error)
