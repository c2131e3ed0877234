"""The demo data set: two sites, three pools, 62 nodes of realistic shapes, tenants and bookings.

Every row is keyed by a stable name, so building it twice gives the same data. A build only creates
what is missing and never changes a row that exists: a restart (`make run` seeds again) keeps what
an operator or tenant changed since. What an operator may remove (a share, a policy, a quota) is
not made again once the audit names it; what the audit does not follow (a tenant's members, the
maintenance window) is made only with the tenant, user or node it belongs to.
"""

import contextlib
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field

from django.contrib.auth.models import Group, User
from django.db import connection, transaction
from django.utils import timezone

from capacity.models import Quota
from capacity.rollups import refresh_rollups
from devtools.demo_bookings import ACTOR, DEMO_WINDOW_NODE, build_bookings, build_window
from devtools.demo_samples import build_samples
from inventory.changelog import recording
from inventory.ingest import IngestError, Reporter, apply_node_report
from inventory.models import (
    Device,
    DeviceLink,
    Node,
    NodeCondition,
    NodeImageCache,
    NodeLabel,
    NodeReport,
    NodeResource,
    NodeTaint,
    Pool,
    Site,
    Tenant,
)
from policy.models import PoolPolicy, PoolShare
from policy.pool_policy import parse_policy, set_policy
from policy.shares import set_share
from trail.models import AuditRecord

DEMO_NAMESPACE = uuid.UUID("6f1c2a3e-8a41-4c1e-9a53-0d6f5b7e2a10")
OPERATORS_GROUP = "operators"


def device_uuid(prefix: str, *parts: object) -> str:
    """Return a stable device uuid such as `GPU-…` for a node's device."""
    return f"{prefix}-{uuid.uuid5(DEMO_NAMESPACE, '/'.join(map(str, parts)))}"


@dataclass(frozen=True)
class Shape:
    """A kind of node: its GPUs, how they link, and its scalar resources."""

    product: str
    model: str
    vram_gib: int
    architecture: str
    compute_capability: str
    links: dict[tuple[int, int], tuple[str, int]]
    vcpu: int
    memory_gib: int
    vcpu_ratio: float = 1.0
    mig: dict[int, tuple[str, int]] = field(default_factory=dict)  # gpu index -> (slice class, count)
    fabric: str | None = None


def _all_pairs(n: int) -> Iterator[tuple[int, int]]:
    return ((a, b) for a in range(n) for b in range(a + 1, n))


def _pcie_rank(a: int, b: int) -> str:
    """GPUs 0-3 on socket 0 and 4-7 on socket 1; pairs (0,1), (2,3) … share a PCIe switch."""
    if a // 4 != b // 4:
        return "SYS"
    return "PIX" if a // 2 == b // 2 else "PXB"


DGX_H100 = Shape(
    product="H100-SXM5-80GB",
    model="H100",
    vram_gib=80,
    architecture="hopper",
    compute_capability="9.0",
    links={p: ("NV", 18) for p in _all_pairs(8)},
    vcpu=224,
    memory_gib=2048,
    vcpu_ratio=1.0,
    fabric="nvl-ams1-a",
)
PCIE_L40S = Shape(
    product="L40S-48GB",
    model="L40S",
    vram_gib=48,
    architecture="ada",
    compute_capability="8.9",
    links={(a, b): (_pcie_rank(a, b), 0) for a, b in _all_pairs(8)},
    vcpu=128,
    memory_gib=1024,
    vcpu_ratio=1.5,
)
A100_MIG = Shape(
    product="A100-SXM4-80GB",
    model="A100",
    vram_gib=80,
    architecture="ampere",
    compute_capability="8.0",
    links={p: ("NV", 12) for p in _all_pairs(8)},
    vcpu=256,
    memory_gib=2048,
    vcpu_ratio=2.0,
    mig={0: ("mig-1g.10gb", 7), 1: ("mig-3g.40gb", 2)},
)


@dataclass(frozen=True)
class PoolPlan:
    """A demo pool and the nodes it holds."""

    slug: str
    name: str
    site: str
    prefix: str
    count: int
    shape: Shape


POOLS = (
    PoolPlan("h100-prod", "H100 production", "ams1", "ams1-dgx", 24, DGX_H100),
    PoolPlan("pcie-batch", "L40S batch", "sfo2", "sfo2-pcie", 24, PCIE_L40S),
    PoolPlan("a100-mig", "A100 with MIG", "sfo2", "sfo2-a100", 14, A100_MIG),
)
SITES = {"ams1": "Amsterdam 1", "sfo2": "San Francisco 2"}
TENANTS = {"acme": "Acme Robotics", "globex": "Globex Corporation"}
QUOTAS = (("gpu", 128), ("vcpu", 4096), ("memoryGiB", 32768), ("*", 32))
# (pool, tenant, guaranteed, borrowing limit, lending limit) in GPUs.
SHARES = (("h100-prod", "acme", 96, None, 32), ("h100-prod", "globex", 48, None, None))
DEMO_POLICY = ("a100-mig", {"idleWarnAfter": "2h", "allowKeepWhenIdle": True})

# Node name -> state to apply; everything else is a healthy active host.
STATES: dict[str, dict] = {
    "ams1-dgx-03": {"cordoned": True},
    "ams1-dgx-04": {"cordoned": True},
    "sfo2-pcie-11": {"cordoned": True},
    "ams1-dgx-07": {"maintenance": True},
    "sfo2-pcie-05": {"provision_state": Node.ProvisionState.PROVISIONING, "converged": False},
    "sfo2-pcie-09": {"connectivity": Node.Connectivity.DISCONNECTED},
    "sfo2-a100-02": {"owner": "globex"},
}
TAINTS = {"ams1-dgx-12": ("dedicated", "acme")}
CONDITIONS = {"sfo2-a100-09": ("Ready", NodeCondition.Status.FALSE, "KubeletDown")}
UNHEALTHY_GPUS = {("sfo2-pcie-14", 6)}


def mig_capable(shape) -> bool:
    """Return whether a GPU model can be split into MIG slices (split here, or an H100)."""
    return bool(shape.mig) or shape.model == "H100"


def node_names() -> list[tuple[PoolPlan, str, int]]:
    """Return every demo node as (pool plan, name, number)."""
    return [(p, f"{p.prefix}-{i:02d}", i) for p in POOLS for i in range(1, p.count + 1)]


def untouched(obj: str) -> bool:
    """Return whether the audit names nothing done to `obj` (e.g. "share:h100-prod/acme"): no one
    set or removed it, so the seed may create it when missing."""
    return not AuditRecord.objects.filter(object=obj).exists()


@transaction.atomic
def build_people() -> dict[str, Tenant]:
    """Create the tenants, their users, the operator and the quotas that are missing."""
    operators, _ = Group.objects.get_or_create(name=OPERATORS_GROUP)
    tenants = {}
    for slug, name in TENANTS.items():
        tenants[slug], made = Tenant.objects.get_or_create(slug=slug, defaults={"name": name})
        user, user_made = _user(slug, staff=False)
        if made or user_made:  # a member an operator removed stays removed
            tenants[slug].users.add(user)
        # "*" is the default for every other resource, such as each MIG slice class.
        for resource, limit in QUOTAS:
            if untouched(f"quota:{slug}/{resource}"):  # one an operator removed stays removed
                Quota.objects.get_or_create(
                    tenant=tenants[slug], resource=resource, defaults={"limit": limit}
                )
    operator, made = _user("operator", staff=True)
    if made:
        operator.groups.add(operators)
    return tenants


def _user(username: str, *, staff: bool) -> tuple[User, bool]:
    user, created = User.objects.get_or_create(
        username=username,
        defaults={"is_staff": staff, "is_superuser": staff, "email": f"{username}@example.com"},
    )
    if created:
        user.set_password(demo_password())
        user.save(update_fields=["password"])
    return user, created


def demo_password() -> str:
    """Return the demo users' password (BERTH_DEMO_PASSWORD, else a development default)."""
    import os

    return os.environ.get("BERTH_DEMO_PASSWORD", "berth-demo")


@transaction.atomic
def build_pools(tenants: dict[str, Tenant]) -> dict[str, Pool]:
    """Create the sites and pools."""
    sites = {
        slug: Site.objects.get_or_create(slug=slug, defaults={"name": n})[0] for slug, n in SITES.items()
    }
    return {
        p.slug: Pool.objects.get_or_create(slug=p.slug, defaults={"name": p.name, "site": sites[p.site]})[0]
        for p in POOLS
    }


@transaction.atomic
def build_node(plan: PoolPlan, pool: Pool, name: str, number: int, tenants: dict[str, Tenant]) -> Node | None:
    """Create one node with its devices, links, labels, resources and state; None when it exists."""
    if Node.objects.filter(name=name).exists():
        return None
    state = dict(STATES.get(name, {}))
    owner = tenants[state.pop("owner")] if "owner" in state else None
    node = Node.objects.create(name=name, pool=pool, owner_tenant=owner, **state)
    shape = plan.shape
    gpus = []
    for i in range(8):
        gpus.append(
            Device(
                node=node,
                uuid=device_uuid("GPU", name, i),
                device_class="gpu",
                index=i,
                numa_node=i // 4,
                healthy=(name, i) not in UNHEALTHY_GPUS,
                attributes={
                    "gpuProduct": shape.product,
                    "gpuModel": shape.model,
                    "vramGiB": shape.vram_gib,
                    "numaNode": i // 4,
                    "architecture": shape.architecture,
                    "computeCapability": shape.compute_capability,
                    "migCapable": mig_capable(shape),
                },
            )
        )
    Device.objects.bulk_create(gpus)
    slices = []
    for gpu_index, (slice_class, count) in shape.mig.items():
        parent = gpus[gpu_index]
        vram = int(slice_class.split(".")[1].removesuffix("gb"))
        for s in range(count):
            slices.append(
                Device(
                    node=node,
                    uuid=device_uuid("MIG", name, gpu_index, s),
                    device_class=slice_class,
                    parent=parent,
                    index=s,
                    numa_node=parent.numa_node,
                    attributes={
                        **parent.attributes,
                        "vramGiB": vram,
                        "migProfile": slice_class.removeprefix("mig-"),
                    },
                )
            )
    Device.objects.bulk_create(slices)
    DeviceLink.objects.bulk_create(
        DeviceLink(node=node, device_a=gpus[a], device_b=gpus[b], rank=rank, nvlinks=bonds)
        for (a, b), (rank, bonds) in shape.links.items()
    )
    labels = {
        "gpu.product": shape.product,
        "gpu.model": shape.model,
        "cuda.driver.major": "550",
        # The label says what the devices' migCapable says (an H100 can be split, even unsplit).
        "mig.capable": "true" if mig_capable(shape) else "false",
        "rack": f"{'ab'[number % 2]}{(number - 1) // 4 + 1:02d}",
    }
    if shape.fabric:
        labels["fabric.domain"] = shape.fabric
    NodeLabel.objects.bulk_create(NodeLabel(node=node, key=k, value=v) for k, v in labels.items())
    system = {"bc.dev/cap.devices.limits": "true", "bc.dev/driver.nvidia": "550.54.15"}
    if plan.slug != "pcie-batch":
        system["bc.dev/cap.binding.kubernetes"] = "true"
    NodeLabel.objects.bulk_create(
        NodeLabel(node=node, key=k, value=v, source=NodeLabel.Source.SYSTEM) for k, v in system.items()
    )
    NodeResource.objects.bulk_create(
        [
            NodeResource(node=node, resource="vcpu", allocatable=shape.vcpu, ratio=shape.vcpu_ratio),
            NodeResource(node=node, resource="memoryGiB", allocatable=shape.memory_gib, ratio=1.0),
        ]
    )
    if plan.slug == "a100-mig" and number % 3 == 1:
        NodeImageCache.objects.create(node=node, image="nvcr.io/nvidia/pytorch:24.05-py3")
    if name in TAINTS:
        key, value = TAINTS[name]
        NodeTaint.objects.create(node=node, key=key, value=value)
    if name in CONDITIONS:
        ctype, status, reason = CONDITIONS[name]
        NodeCondition.objects.create(node=node, type=ctype, status=status, reason=reason)
    return node


def build_settings() -> None:
    """Set the demo's shares and policy where missing and no one has set or removed them."""
    # Shares in one pool, to look at; its pending work is tried in fair order (docs/shares.md).
    for pool, tenant, guaranteed, borrowing, lending in SHARES:
        exists = PoolShare.objects.filter(pool__slug=pool, tenant__slug=tenant).exists()
        if not exists and untouched(f"share:{pool}/{tenant}"):
            set_share(pool, tenant, guaranteed, borrowing, lending)
    # A policy in one pool, as the site's settings would have it, for its pool page and the admin
    # to show (docs/policy.md); h100-prod keeps the site's defaults, to be changed on its page.
    pool, policy = DEMO_POLICY
    if not PoolPolicy.objects.filter(pool__slug=pool).exists() and untouched(f"policy:{pool}"):
        set_policy(pool, parse_policy(policy))


def build_report(first: Node) -> None:
    """Give the first node the report an operator's import would leave, and one its agent had refused."""
    NodeReport.objects.create(node=first, at=timezone.now(), by=ACTOR)
    # A node may set only bc.dev/ labels: the node page shows this as its last refusal.
    with contextlib.suppress(IngestError):
        apply_node_report(
            first, {"labels": {"team": "ml"}}, by=Reporter.node_credential(f"node.{first.name}")
        )


def build_demo(progress=None) -> dict[str, int]:
    """Build what is missing of the demo; `progress` wraps the node iterable (a tqdm bar in the command)."""
    with recording(actor=ACTOR):
        return _build_demo(progress)


def _build_demo(progress) -> dict[str, int]:
    tenants = build_people()
    pools = build_pools(tenants)
    nodes = node_names()
    made = set()
    for plan, name, number in progress(nodes) if progress else nodes:
        if build_node(plan, pools[plan.slug], name, number, tenants) is not None:
            made.add(name)
    with transaction.atomic():
        refresh_rollups([p.pk for p in pools.values()])
    new_bookings = build_bookings(tenants)
    build_samples()
    build_settings()
    if DEMO_WINDOW_NODE in made:
        build_window()
    first = nodes[0][1]
    if first in made:
        build_report(Node.objects.get(name=first))
    with connection.cursor() as cur:
        # Fresh statistics after a bulk load: with stale ones (a test database just flushed),
        # Postgres plans joins over the new rows as if the tables were empty.
        cur.execute("ANALYZE")
    return {"pools": len(pools), "nodes": len(nodes), "new_bookings": new_bookings}
