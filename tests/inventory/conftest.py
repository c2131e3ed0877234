"""Inventory fixtures: an empty H100 pool for the fleet import."""

import pytest

from inventory.models import Pool, Site


@pytest.fixture
def h100_pool(db):
    site = Site.objects.create(slug="ams1", name="Amsterdam 1")
    return Pool.objects.create(slug="h100-prod", name="H100 production", site=site)
