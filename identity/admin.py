"""The admin's read-only view of provider identities and sign-ins."""

from django.contrib import admin

from identity.models import ProviderIdentity, SignInEvent


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
