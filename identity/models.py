from django.conf import settings
from django.db import models


class ProviderIdentity(models.Model):
    """Who a Berth user is at the identity provider: its issuer and `sub`, never the e-mail."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="provider_identity"
    )
    issuer = models.CharField(max_length=255)
    subject = models.CharField(max_length=255)
    created_at = models.DateTimeField(auto_now_add=True)
    last_sign_in_at = models.DateTimeField(null=True, blank=True)
    # The groups claim at the last sign-in, as the provider sent it (what the memberships came from).
    groups = models.JSONField(default=list, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["issuer", "subject"],
                name="identity_one_user_per_issuer_subject",
                violation_error_message="This provider identity already belongs to a user.",
            )
        ]

    def __str__(self) -> str:
        return f"{self.subject} at {self.issuer}"
