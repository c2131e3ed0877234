from django.db import models

ACTOR_MAX = 150  # a username's length: "node.<name>" credentials and commands fit too


class AuditRecord(models.Model):
    """One change that no other history records (quota, share, policy, webhook, feed, token).

    Written in the transaction of the change it describes (trail.record), so that it is there if
    and only if the change is.
    """

    at = models.DateTimeField()
    actor = models.CharField(max_length=ACTOR_MAX)
    action = models.CharField(max_length=40, help_text="quota.set, share.delete, token.issue, …")
    object = models.CharField(max_length=300, help_text="quota:acme/gpu, share:h100-prod/acme, …")
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    reason = models.CharField(max_length=300, blank=True)
    request_id = models.CharField(max_length=64, null=True, blank=True)

    class Meta:
        indexes = [
            # The audit export pages newest first; its actor and object filters read these two.
            models.Index(fields=["-at", "-id"], name="audit_record_newest_idx"),
            models.Index(fields=["actor", "-at"], name="audit_record_actor_idx"),
            models.Index(fields=["object", "-at"], name="audit_record_object_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.actor} {self.action} {self.object} at {self.at:%Y-%m-%d %H:%M:%S}"
