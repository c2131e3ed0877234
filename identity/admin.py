"""The admin's read-only view of provider identities and sign-ins; users' and groups' changes in the
audit; API tokens with their expiry and revocation, and the node admin's action that issues node keys."""

from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import GroupAdmin, UserAdmin
from django.contrib.auth.models import Group
from django.db import transaction
from rest_framework.authtoken import admin as authtoken_admin
from rest_framework.authtoken.models import TokenProxy

from identity.models import ProviderIdentity, SignInEvent
from identity.tokens import (
    issue_node_token,
    node_key_works,
    replaced_key_note,
    revoke_token,
    token_expiry,
    token_revoked_at,
)
from inventory.models import Node
from trail.audited_admin import AuditedAdmin
from trail.record import record


@admin.register(ProviderIdentity)
class ProviderIdentityAdmin(admin.ModelAdmin):
    """Who each SSO user is at the provider, and the groups of their last sign-in."""

    list_display = ["user", "subject", "issuer", "last_sign_in_at"]
    search_fields = ["user__username", "subject"]
    readonly_fields = ["user", "issuer", "subject", "groups", "created_at", "last_sign_in_at"]


@admin.register(SignInEvent)
class SignInEventAdmin(admin.ModelAdmin):
    """Sign-ins and failed sign-ins: read only."""

    list_display = ["at", "username", "method", "succeeded", "subject", "reason", "address"]
    list_filter = ["method", "succeeded"]
    search_fields = ["username", "subject"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


# --- users: each change an operator makes in the admin is in the audit, before and after -----------

User = get_user_model()
USER_FIELDS = ("username", "email", "is_active", "is_staff", "is_superuser")


def user_values(user) -> dict:
    """Return what the audit keeps of a user: never the password."""
    values = {name: getattr(user, name) for name in USER_FIELDS}
    values["groups"] = sorted(user.groups.values_list("name", flat=True)) if user.pk else []
    return values


class AuditedUserAdmin(AuditedAdmin, UserAdmin):
    """Django's user admin; `user.create`, `user.set` (what changed) and `user.delete` go to the audit."""

    audit_kind, audit_create = "user", True

    def audit_object(self, obj) -> str:
        return f"user:{obj.get_username()}"

    def audit_values(self, obj) -> dict:
        return user_values(obj)


def group_values(group) -> dict:
    """Return what the audit keeps of a group: its name and its permissions' codenames."""
    perms = group.permissions.values_list("content_type__app_label", "codename") if group.pk else []
    return {"name": group.name, "permissions": sorted(f"{app}.{code}" for app, code in perms)}


class AuditedGroupAdmin(AuditedAdmin, GroupAdmin):
    """Django's group admin; `group.create`, `group.set` and `group.delete` go to the audit.

    A group's name is a role (the operators group makes operators), so renaming one is recorded too.
    """

    audit_kind, audit_create = "group", True

    def audit_object(self, obj) -> str:
        return f"group:{obj.name}"

    def audit_values(self, obj) -> dict:
        return group_values(obj)


if admin.site.is_registered(User):
    admin.site.unregister(User)
admin.site.register(User, AuditedUserAdmin)
if admin.site.is_registered(Group):
    admin.site.unregister(Group)
admin.site.register(Group, AuditedGroupAdmin)


class TokenAdmin(authtoken_admin.TokenAdmin):
    """DRF's token admin with each token's expiry and revocation, and an action to revoke."""

    list_display = ["key", "user", "created", "expires", "revoked"]
    list_select_related = ["user", "lifetime"]
    actions = ["revoke"]

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        # In the admin's transaction; never the key.
        after = {"expiresAt": token_expiry(obj).isoformat()}
        record(
            "token.issue" if not change else "token.change", f"token:{obj.user.get_username()}", after=after
        )

    def delete_model(self, request, obj):
        record("token.delete", f"token:{obj.user.get_username()}")
        super().delete_model(request, obj)

    def delete_queryset(self, request, queryset):
        with transaction.atomic():
            for token in queryset.select_related("user"):
                record("token.delete", f"token:{token.user.get_username()}")
            super().delete_queryset(request, queryset)

    @admin.display(description="expires")
    def expires(self, token):
        return token_expiry(token)

    @admin.display(description="revoked")
    def revoked(self, token):
        return token_revoked_at(token) or "-"

    @admin.action(description="Revoke the selected tokens (they answer 401 from now on)")
    def revoke(self, request, queryset):
        tokens = list(queryset.select_related("user"))
        for token in tokens:
            revoke_token(token, by=f"{request.user.get_username()} (admin)")
        self.message_user(request, f"Revoked {len(tokens)} token{'s' if len(tokens) != 1 else ''}.")


admin.site.unregister(TokenProxy)
admin.site.register(TokenProxy, TokenAdmin)


# Node credentials are identity's (tokens); inventory, which registers the node admin, never imports
# identity, so the action joins the node admin from here.
MAX_NODE_CREDENTIALS = 50


@admin.action(description="Issue node credentials for the agents (each node's old key stops working)")
def issue_node_credentials(modeladmin, request, queryset):
    """Issue each selected node's own token and show the keys once, as `issue_token --node` prints them."""
    nodes = list(queryset.order_by("name")[: MAX_NODE_CREDENTIALS + 1])
    if len(nodes) > MAX_NODE_CREDENTIALS:
        modeladmin.message_user(
            request,
            f"Select at most {MAX_NODE_CREDENTIALS} nodes at a time: each key is shown once.",
            messages.ERROR,
        )
        return
    for node in nodes:
        replaced = node_key_works(node.name)
        token = issue_node_token(node.name)
        # Words first: the admin capitalises a message's first letter, which would change a key.
        modeladmin.message_user(
            request,
            f"Key for node.{node.name}: {token.key} (expires {token_expiry(token):%Y-%m-%d %H:%M} UTC); "
            f"{replaced_key_note(node.name, replaced)}",
            messages.WARNING if replaced else messages.INFO,
        )


_node_admin = type(admin.site.get_model_admin(Node))
_node_admin.actions = [*(_node_admin.actions or ()), issue_node_credentials]
