"""Build nodes and reports for the ingestion tests; report as an operator (full rights).

test_trust.py reports as the node itself.
"""

from inventory import ingest
from inventory.models import Device, Node, Pool, Site, Tenant

from tenants import make_tenant

H100 = {"gpuProduct": "H100-SXM5-80GB", "vramGiB": 80}
OPERATOR = ingest.Reporter.operator("ops")


def apply_node_report(node, report):
    return ingest.apply_node_report(node, report, by=OPERATOR)


def apply_node_report_json(name, text):
    return ingest.apply_node_report_json(name, text, by=OPERATOR)


def make_node(name: str = "dgx-01", gpus: int = 8, *, reverse: bool = False) -> Node:
    """Create a node in its own pool with `gpus` GPUs; `reverse` gives the last GPU the lowest id."""
    tenant = Tenant.objects.filter(slug="acme").first() or make_tenant("acme", "Acme")
    site, _ = Site.objects.get_or_create(slug="fra1", defaults={"name": "Frankfurt 1"})
    pool = Pool.objects.create(slug=f"pool-{name}", name=f"Pool {name}", site=site)
    pool.tenants.add(tenant)
    node = Node.objects.create(name=name, pool=pool)
    order = range(gpus - 1, -1, -1) if reverse else range(gpus)
    for i in order:
        Device.objects.create(node=node, uuid=f"GPU-{name}-{i}", index=i, attributes=H100)
    return node


def gpu_report(node_name: str, indexes, **extra) -> dict:
    """Return a report listing healthy H100s at `indexes`."""
    devices = [
        {
            "uuid": f"GPU-{node_name}-{i}",
            "class": "gpu",
            "index": i,
            "numaNode": 0 if i < 4 else 1,
            "parent": None,
            "healthy": True,
            "attributes": H100,
        }
        for i in indexes
    ]
    return {"devices": devices, **extra}
