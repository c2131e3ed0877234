from django.conf import settings
from django.db import models


class Tenant(models.Model):
    """An organisation that books capacity; its slug is the tenant id of the API (`acme`)."""

    slug = models.SlugField(unique=True)
    name = models.CharField(max_length=200)
    users = models.ManyToManyField(settings.AUTH_USER_MODEL, related_name="tenants", blank=True)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug


class Site(models.Model):
    """A data centre or region that holds pools."""

    slug = models.SlugField(unique=True)
    name = models.CharField(max_length=200)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug


class Pool(models.Model):
    """A set of nodes that requests are placed into; archived pools take no new placements."""

    slug = models.SlugField(unique=True)
    name = models.CharField(max_length=200)
    site = models.ForeignKey(Site, on_delete=models.PROTECT, related_name="pools")
    archived = models.BooleanField(default=False)
    owner_tenant = models.ForeignKey(
        Tenant,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="owned_pools",
        help_text="Set for a tenant's private pool; its tenant-owned nodes add capacity only here.",
    )
    tenants = models.ManyToManyField(
        Tenant, related_name="pools", blank=True, help_text="Tenants that may book here; none means any."
    )

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug


class PoolGeneration(models.Model):
    """A number that changes whenever a pool's inventory does (nodes, devices, links, labels).

    Triggers set it from a sequence, so a value never repeats, not even after a rollback; the
    placer keeps a pool's static index in memory for as long as the generation it read holds.
    """

    pool = models.OneToOneField(Pool, on_delete=models.CASCADE, primary_key=True, related_name="generation")
    generation = models.BigIntegerField()

    def __str__(self) -> str:
        return f"{self.pool_id}@{self.generation}"
