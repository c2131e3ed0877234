from django.db import models
from django.db.models import Q

from inventory.models import Pool, Tenant


class PoolShare(models.Model):
    """A tenant's share of a pool: what it is guaranteed, may borrow and lends, in whole GPUs.

    Whole-GPU equivalents: a MIG slice counts as its share of its GPU (inventory.gpu_share).
    `borrowing_limit_gpus` null: no limit on borrowing; `lending_limit_gpus` null: all of the
    guarantee may be lent. A pool without rows has no shares and places as before; once it has
    some, a tenant without a row is guaranteed 0. The guarantees of a pool add up to at most its
    bookable GPUs (policy.shares checks it under the pool's lock).
    """

    pool = models.ForeignKey(Pool, on_delete=models.CASCADE, related_name="shares")
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="pool_shares")
    guaranteed_gpus = models.IntegerField()
    borrowing_limit_gpus = models.IntegerField(null=True, blank=True)
    lending_limit_gpus = models.IntegerField(null=True, blank=True)

    class Meta:
        ordering = ["pool", "tenant"]
        constraints = [
            models.UniqueConstraint(
                fields=["pool", "tenant"],
                name="poolshare_unique",
                violation_error_message="The tenant already has a share of this pool.",
            ),
            models.CheckConstraint(
                condition=Q(guaranteed_gpus__gte=0),
                name="poolshare_guaranteed_nonnegative",
                violation_error_message="A guarantee cannot be negative.",
            ),
            models.CheckConstraint(
                condition=Q(borrowing_limit_gpus__isnull=True) | Q(borrowing_limit_gpus__gte=0),
                name="poolshare_borrowing_nonnegative",
                violation_error_message="A borrowing limit cannot be negative.",
            ),
            models.CheckConstraint(
                condition=Q(lending_limit_gpus__isnull=True) | Q(lending_limit_gpus__gte=0),
                name="poolshare_lending_nonnegative",
                violation_error_message="A lending limit cannot be negative.",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.pool}:{self.tenant}={self.guaranteed_gpus}"
