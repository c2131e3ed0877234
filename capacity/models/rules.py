"""The pool rules other apps turn on for a pool: the rules registry's data (capacity.rules)."""

from django.db import models

from inventory.models import Pool


class PoolRule(models.Model):
    """A pool rule an app outside the pool's policy turned on for a pool (the Slurm bridge's `slurm`).

    The pool's lookup reads the names with the pool (capacity.placers.loader, PoolRow.rules), so a
    rule's `applies` costs no statement, and a pool without any runs none of them.
    """

    pool = models.ForeignKey(Pool, on_delete=models.CASCADE, related_name="+")
    rule = models.CharField(max_length=50)

    class Meta:
        ordering = ["pool", "rule"]
        constraints = [
            models.UniqueConstraint(
                fields=["pool", "rule"],
                name="poolrule_once",
                violation_error_message="A rule is on for a pool once.",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.pool_id}:{self.rule}"


def switch_rule(pool_pk: int, rule: str, on: bool) -> None:
    """Turn a rule on or off for a pool (the next lookup of the pool reads it)."""
    if on:
        PoolRule.objects.get_or_create(pool_id=pool_pk, rule=rule)
    else:
        PoolRule.objects.filter(pool_id=pool_pk, rule=rule).delete()
