"""The bridge's tests run against the real Slurm of `make slurm` (devtools/slurm_cluster.py): no stand-in.

Two nodes, berth-n1 and berth-n2, with 8 fake GPUs each, mirrored in Berth's lab-pool under the same
names. Without scontrol on the machine the tests are skipped (CI installs it); with scontrol and no
cluster answering they fail, naming `make slurm`. Each test starts from a Slurm with no reservation
and no job.
"""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
from datetime import timedelta

import pytest
from slurm_helpers import CONF, ms, now, wipe

from devtools import slurm_cluster

from api_people import acme, client_for, deterministic_placement, make_user, operator  # noqa: F401
from page_people import acme_user, operators_group  # noqa: F401


def pytest_collection_modifyitems(items):
    """Keep every Slurm test on one pytest-xdist worker (`--dist loadgroup`): they share one cluster.

    Reservation names hold reservation ids, which each worker's test database numbers from 1, and a
    test wipes the cluster: two workers at once would take each other's reservations.
    """
    for item in items:
        if item.path.parent.name == "slurm":
            item.add_marker(pytest.mark.xdist_group("slurm"))


@pytest.fixture(scope="session")
def cluster():
    """The local cluster, answering; skip without scontrol, fail without the cluster."""
    if shutil.which("scontrol") is None:
        pytest.skip(
            "no scontrol on this machine: apt-get install slurm-client (make slurm installs the cluster)"
        )
    if subprocess.run(
        ["scontrol", "ping"], env=slurm_cluster.env(), capture_output=True, timeout=20
    ).returncode:
        pytest.fail("no local Slurm cluster answers: run `make slurm` first")
    return slurm_cluster


@pytest.fixture
def clean_slurm(cluster, settings):
    """A Slurm with nothing in it, and Berth's settings pointed at it."""
    settings.SLURM = {**settings.SLURM, "SCONTROL": ["scontrol"], "CONF": CONF}
    wipe()
    yield
    wipe()


@pytest.fixture
def lab(clean_slurm, make_node, tenant, other_tenant):
    """berth-n1 and berth-n2 (8 GPUs each) in lab-pool, bridged; acme and globex are tenants."""
    from slurm.models import BridgedPool

    nodes = [make_node(name, gpus=8) for name in slurm_cluster.NODES]
    BridgedPool.objects.create(pool=nodes[0].pool)
    return nodes


@pytest.fixture
def book():
    """Book through the services as of the real clock, with no random pick (the tests know the node)."""
    from capacity import services
    from capacity.conf import placer_config

    config = dataclasses.replace(placer_config(), random=None)

    def reserve(start=timedelta(0), length=timedelta(minutes=20), tenant="acme", **extra):
        at = now().replace(microsecond=0)  # whole seconds, as Slurm keeps them
        data = {
            "tenantId": tenant,
            "poolId": "lab-pool",
            "during": {"start": ms(at + start), "end": ms(at + start + length)},
            **extra,
        }
        if "devices" not in data and data.get("binding") != "node":
            data["binding"] = "node"
        return services.reserve(data, now=at, config=config)

    return reserve
