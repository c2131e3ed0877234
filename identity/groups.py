"""Groups decide tenants and roles: the groups claim sets a user's memberships at every sign-in.

`berth-tenant-<slug>` (BERTH_OIDC_TENANT_GROUP_PREFIX) is membership of tenant <slug>, which must
exist (a group naming no tenant is logged and ignored, never creates one); `berth-operators`
(BERTH_OIDC_OPERATOR_GROUP) is the operator role, Django's "operators" group (capacity/access.py).
Memberships the claim does not name are taken away; staff and superuser flags are never touched.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.contrib.auth.models import Group

from inventory.models import Tenant
from trail.record import record

# capacity.access.OPERATORS_GROUP: identity sits beside capacity, not on it.
OPERATORS_GROUP = "operators"

log = logging.getLogger(__name__)


class BadGroupsClaim(ValueError):
    """The groups claim is not a list of names."""


def groups_from(claims: dict) -> list[str]:
    """Return the groups claim as a list of names (absent is none)."""
    value = claims.get(settings.BERTH_OIDC_GROUPS_CLAIM, [])
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise BadGroupsClaim("The provider's groups claim is not a list of names.")
    return value


def apply_groups(user, groups: list[str]) -> None:
    """Set the user's tenants and operator role from the groups claim, taking away what it lacks."""
    prefix = settings.BERTH_OIDC_TENANT_GROUP_PREFIX
    wanted = {name.removeprefix(prefix) for name in groups if prefix and name.startswith(prefix)}
    tenants = list(Tenant.objects.filter(slug__in=wanted))
    unknown = wanted - {tenant.slug for tenant in tenants}
    for slug in sorted(unknown):
        log.warning("Sign-in of %s: group %s%s names no tenant; ignored.", user.get_username(), prefix, slug)
    operators = Group.objects.get_or_create(name=OPERATORS_GROUP)[0]
    before = _roles(user, operators)
    user.tenants.set(tenants)
    if settings.BERTH_OIDC_OPERATOR_GROUP in groups:
        user.groups.add(operators)
    else:
        user.groups.remove(operators)
    after = {"tenants": sorted(tenant.slug for tenant in tenants), "operator": operators in user.groups.all()}
    if after != before:
        # The provider's groups changed what this user may do (at a sign-in or a session's re-check,
        # whoever is signed in): the audit says what, and when, as the provider's doing.
        record(
            "user.groups-set",
            f"user:{user.get_username()}",
            before=before,
            after=after,
            reason="the groups claim at sign-in",
            by="identity-provider",
        )
    for cached in ("_berth_operator", "_berth_tenants"):
        user.__dict__.pop(cached, None)


def _roles(user, operators: Group) -> dict:
    """Return the user's tenants and operator role as the audit shows them."""
    return {
        "tenants": sorted(user.tenants.values_list("slug", flat=True)),
        "operator": user.groups.filter(pk=operators.pk).exists(),
    }
