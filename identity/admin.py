"""The admin's read-only view of provider identities and sign-ins; users' and groups' changes in the audit."""

from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import GroupAdmin, UserAdmin
from django.contrib.auth.models import Group

from identity.models import ProviderIdentity, SignInEvent
from trail.audited_admin import AuditedAdmin


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
