"""Queue requests for the pool-lease placer, and read what a tenant's quota charges hold."""

from datetime import timedelta

from capacity import services
from capacity.models import QuotaCharge
from capacity.placement.timeline import peak

from booking import NOW, config

YEAR = timedelta(days=366)


def lease(**kw):
    """The settings' config with the pool-lease placer and no random top-N pick."""
    return config(placer="pool-lease", **kw)


def queue(data, **kw):
    """Reserve `data` with the pool-lease placer (or `cfg`) at NOW; return the reservation."""
    return services.reserve(data, config=kw.pop("cfg", None) or lease(), now=NOW, **kw).reservation


def used(resource="gpu", tenant="acme"):
    """Return what the tenant's live quota charges hold of a resource at its busiest instant.

    A released reservation's charges end at its release (the audit checks that); they are left out
    here so the figure does not depend on the wall clock.
    """
    charges = QuotaCharge.objects.filter(tenant__slug=tenant, resource=resource).exclude(
        reservation__status="released"
    )
    return peak([(c.during.lower, c.during.upper, c.amount) for c in charges], NOW - YEAR, NOW + YEAR)
