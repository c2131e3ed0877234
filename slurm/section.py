"""The pool page's Slurm section: whether the pool is bridged, each tenant's account, and how the bridge is doing.

A section of capacity's pool page (capacity.views.pool_sections), registered by slurm/apps.py. The
settings are kept with the page's fragment; the bridge's state (last pass, problems) is read fresh.
"""

from __future__ import annotations

from django import forms
from django.http import HttpRequest
from django.template.loader import render_to_string

from capacity.port import CapacityError, Section, may_set_policy

from . import services
from .models import BridgedPool

STATE_PLACEHOLDER = "berth-slurm-state-placeholder-7a41"


class BridgeForm(forms.Form):
    """The pool's bridge and one tenant's account, as the API's PUTs take them."""

    bridged = forms.BooleanField(label="Mirror bookings into Slurm", required=False)
    accountsRequired = forms.BooleanField(
        label="Tenants need an account mapping",
        required=False,
        help_text="off: a tenant's slug is its Slurm account",
    )
    wholeNodesOnly = forms.BooleanField(
        label="Whole nodes only",
        required=False,
        help_text="GPU-level bookings are refused: Slurm reserves nodes",
    )
    tenant = forms.SlugField(label="Tenant", required=False, help_text="its slug")
    account = forms.CharField(
        label="Slurm account", required=False, max_length=64, help_text="blank removes the tenant's mapping"
    )


def _context(request: HttpRequest, pool, form: BridgeForm | None, error: str, placeholder: str) -> dict:
    # One read for a pool that is not bridged (the kept page reads nothing of it again).
    row = BridgedPool.objects.filter(pool=pool).first()
    bridge = services.body_of(pool, row)
    context = {"slurm": bridge, "slurm_error": error, "pool": pool}
    if may_set_policy(request.user):
        initial = {
            "bridged": bridge["bridged"] and bridge["enabled"],
            "accountsRequired": bridge["accountsRequired"],
            "wholeNodesOnly": bridge["wholeNodesOnly"],
        }
        context["slurm_form"] = form or BridgeForm(prefix="slurm", initial=initial)
        if row is None:
            pass  # nothing to say of a bridge that is not there, and nothing to read per page
        elif placeholder:
            context["slurm_state_placeholder"] = placeholder
        else:
            context["slurm_state"] = {"bridge": row, "behind": services.behind(row)}
    return context


def _state(pool) -> dict | None:
    bridge = BridgedPool.objects.filter(pool=pool).first()
    if bridge is None:
        return None
    return {"bridge": bridge, "behind": services.behind(bridge)}


def state_html(request: HttpRequest, pool) -> str:
    """Draw the bridge's state, read fresh for each page."""
    return render_to_string("slurm/pool_section.html#state", {"slurm_state": _state(pool)}, request)


def _apply(request: HttpRequest, pool) -> tuple[BridgeForm | None, str]:
    form = BridgeForm(request.POST, prefix="slurm")
    if not form.is_valid():
        return form, ""
    data = form.cleaned_data
    try:
        if data["bridged"]:
            services.set_bridge(
                pool.slug,
                {
                    "enabled": True,
                    "accountsRequired": data["accountsRequired"],
                    "wholeNodesOnly": data["wholeNodesOnly"],
                },
            )
        elif BridgedPool.objects.filter(pool=pool, enabled=True).exists():
            services.unbridge(pool.slug)
        tenant, account = data["tenant"], data["account"].strip()
        if tenant and account:
            services.set_account(pool.slug, tenant, services.parse_account({"account": account}))
        elif tenant and services.bridge_body(pool.slug)["accounts"].get(tenant):
            services.delete_account(pool.slug, tenant)
    except CapacityError as err:
        if err.message.startswith("account"):
            form.add_error("account", err.message)
            return form, ""
        return form, err.message
    return None, ""


SECTION = Section("slurm", context=_context, apply=_apply, placeholder=STATE_PLACEHOLDER, fresh=state_html)
