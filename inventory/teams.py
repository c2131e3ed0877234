"""Teams (tenants) and their members: create a team, add and remove a member; each change in the audit.

The team page (policy/teams.py) and the admin write through here or record as it does: `team.create`
(`tenant:<slug>`, its slug and name after), `team.set` (the name before and after),
`membership.add` and `membership.remove` (`membership:<slug>/<user>`, the membership after or before).
People who sign in through SSO get their teams from the provider's groups at every sign-in
(identity/groups.py): a membership set here lasts until then.
"""

from __future__ import annotations

import re

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction

from inventory.errors import InventoryError
from inventory.models import Tenant
from trail.record import record

SLUG = re.compile(r"[a-z0-9][a-z0-9-]{0,49}")
# A node's own credential (capacity.access.NODE_USER_PREFIX): never a team's member.
NODE_USER_PREFIX = "node."
NAME_MAX = 200


def team_values(tenant: Tenant) -> dict:
    """Return what the audit keeps of a team."""
    return {"slug": tenant.slug, "name": tenant.name}


def membership(tenant_slug: str, username: str) -> str:
    """Return the audit's object for one membership: membership:acme/alice."""
    return f"membership:{tenant_slug}/{username}"


def _name(name: object) -> str:
    name = name.strip() if isinstance(name, str) else ""
    if not name or len(name) > NAME_MAX or any(ord(c) < 32 for c in name):
        raise InventoryError("INVALID_INPUT", f"name: the team's name, 1 to {NAME_MAX} characters")
    return name


def create_team(slug: object, name: object) -> Tenant:
    """Create a team; refuse a slug that is taken or not a slug (INVALID_INPUT, CONFLICT)."""
    slug = slug.strip() if isinstance(slug, str) else ""
    if not SLUG.fullmatch(slug):
        raise InventoryError(
            "INVALID_INPUT", "slug: lower-case letters, digits and '-', starting with a letter or digit"
        )
    name = _name(name)
    try:
        with transaction.atomic():
            tenant = Tenant.objects.create(slug=slug, name=name)
            record("team.create", f"tenant:{slug}", after=team_values(tenant))
    except IntegrityError:
        raise InventoryError("CONFLICT", f"slug: there is already a team {slug}") from None
    return tenant


def rename_team(slug: str, name: object) -> Tenant:
    """Change a team's name (its slug is its id in the API and never changes here)."""
    name = _name(name)
    with transaction.atomic():
        tenant = _locked(slug)
        if tenant.name != name:
            before = {"name": tenant.name}
            tenant.name = name
            tenant.save(update_fields=["name"])
            record("team.set", f"tenant:{slug}", before=before, after={"name": name})
    return tenant


def _locked(slug: str) -> Tenant:
    tenant = Tenant.objects.select_for_update().filter(slug=slug).first()
    if tenant is None:
        raise InventoryError("NOT_FOUND", f"no team {slug}")
    return tenant


def add_member(slug: str, username: object) -> None:
    """Make a user a member of the team; refuse an unknown user (people appear at their first sign-in)."""
    username = username.strip() if isinstance(username, str) else ""
    user = get_user_model().objects.filter(username=username).first() if username else None
    if user is None or username.startswith(NODE_USER_PREFIX):
        raise InventoryError(
            "INVALID_INPUT",
            f"user: no user {username or '(blank)'}; people appear here once they have signed in",
        )
    with transaction.atomic():
        tenant = _locked(slug)
        if tenant.users.filter(pk=user.pk).exists():
            return
        tenant.users.add(user)
        record("membership.add", membership(slug, username), after={"tenant": slug, "user": username})


def remove_member(slug: str, username: str) -> None:
    """Take a user out of the team; NOT_FOUND when the user is not a member."""
    with transaction.atomic():
        tenant = _locked(slug)
        user = tenant.users.filter(username=username).first()
        if user is None:
            raise InventoryError("NOT_FOUND", f"user: {username} is not a member of {slug}")
        tenant.users.remove(user)
        record("membership.remove", membership(slug, username), before={"tenant": slug, "user": username})
