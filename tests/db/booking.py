"""Helpers for booking tests: a fixed clock and requests built in a line."""

import dataclasses
from datetime import UTC, datetime

from capacity import services
from capacity.conf import placer_config

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
MS = int(NOW.timestamp() * 1000)
HOUR = 3_600_000


def config(**kw):
    """The settings' placer config without the random top-N pick, so tests know the node."""
    return dataclasses.replace(placer_config(), random=None, **kw)


def ask(gpus=1, tenant="acme", pool="lab-pool", start=0, hours=24, **extra):
    return {
        "tenantId": tenant,
        "poolId": pool,
        "devices": [{"class": "gpu", "count": gpus}],
        "during": {"start": MS + start * HOUR, "end": MS + (start + hours) * HOUR},
        **extra,
    }


def reserve(data, **kw):
    return services.reserve(data, now=NOW, config=config(), **kw)
