"""What the Slurm bridge keeps: which pools are bridged, each tenant's account, what Slurm's view brought."""

from django.db import models

from capacity.port import MaintenanceWindow
from inventory.models import Pool, Tenant


class BridgedPool(models.Model):
    """A pool whose bookings are mirrored into a Slurm cluster as reservations (docs/slurm.md).

    `accounts_required`: a tenant books here only with an account mapping (SlurmAccount); without
    it, a tenant's Slurm account is its slug. `whole_nodes_only`: only whole-node leases and gangs
    may be booked here, the bookings Slurm can hold to (it reserves nodes, not GPUs). The last pass's outcome is kept here: when it ran,
    when one last reached Slurm, and what it could not do (`problems`, shown as the bridge's
    conditions).
    """

    pool = models.OneToOneField(Pool, on_delete=models.CASCADE, primary_key=True, related_name="+")
    enabled = models.BooleanField(default=True)
    accounts_required = models.BooleanField(default=False)
    whole_nodes_only = models.BooleanField(default=False)
    last_pass_at = models.DateTimeField(null=True, blank=True)
    last_ok_at = models.DateTimeField(null=True, blank=True)
    problems = models.JSONField(default=list, blank=True)

    def __str__(self) -> str:
        return f"bridged {self.pool_id}"


class SlurmAccount(models.Model):
    """The Slurm account a tenant's bookings in a bridged pool are reserved for (`Accounts=`)."""

    pool = models.ForeignKey(BridgedPool, on_delete=models.CASCADE, related_name="accounts")
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    account = models.CharField(max_length=64)

    class Meta:
        ordering = ["pool", "tenant"]
        constraints = [
            models.UniqueConstraint(
                fields=["pool", "tenant"],
                name="slurmaccount_once",
                violation_error_message="A tenant has one Slurm account per bridged pool.",
            ),
            models.CheckConstraint(
                condition=models.Q(account__regex=r"^[a-z0-9][a-z0-9_.-]{0,63}$"),
                name="slurmaccount_valid",
                violation_error_message="A Slurm account is lower-case letters, digits, '_', '.' and '-'.",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.tenant_id}→{self.account}"


class ImportedReservation(models.Model):
    """A reservation an admin made by hand in Slurm, held in Berth as a maintenance window on its nodes."""

    name = models.CharField(max_length=200, unique=True)
    window = models.OneToOneField(MaintenanceWindow, on_delete=models.CASCADE, related_name="+")
    starts_at = models.DateTimeField()
    ends_at = models.DateTimeField()
    nodes = models.JSONField(default=list)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name
