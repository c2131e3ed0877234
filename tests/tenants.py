"""Tenants as tests need them: with a default quota row, as an operator would set one."""

# Tenants in tests hold a default quota no test reaches unless it sets its own limits: a resource
# with no quota row and no default is refused (capacity.placers.quota).
TEST_DEFAULT_QUOTA = 1_000_000


def make_tenant(slug: str, name: str | None = None, default_quota: int | None = TEST_DEFAULT_QUOTA):
    """Create a tenant with a default quota row ('*') unless `default_quota` is None."""
    from capacity.models import Quota
    from inventory.models import Tenant

    tenant = Tenant.objects.create(slug=slug, name=name or slug.title())
    if default_quota is not None:
        Quota.objects.create(tenant=tenant, resource="*", limit=default_quota)
    return tenant
