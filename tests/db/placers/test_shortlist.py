"""The SQL shortlist gives the same top N as planning every node of the pool."""

import random
from datetime import timedelta

import pytest

from capacity.placement import validate_request
from capacity.placers.index import pool_index, shortlist_order
from capacity.placers.loader import load_pool
from capacity.placers.planning import reach, shortlist_size
from capacity.placers.reads import plan_reads, plan_request
from inventory import services as nodes

from booking import NOW, ask, config, reserve


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_shortlist_ranks_like_the_whole_pool(tenant, make_node, seed):
    """
    70 nodes of 8 GPUs: NV boards, PIX/SYS boxes and boards with unknown links, some cordoned,
    random bookings; more nodes fit than the shortlist keeps (10 for top 5), so both paths are exercised.
    """
    rng = random.Random(seed)
    for i in range(70):
        make_node(f"n{i:02d}", gpus=8, links=rng.choice(["NV", "NV", "PIX", "SYS", None]))
        if rng.random() < 0.1:
            nodes.cordon(f"n{i:02d}")
    for _ in range(40):
        reserve(ask(rng.choice([1, 2, 4]), start=rng.choice([0, 0, 30]), hours=24))
    pool = load_pool("lab-pool")
    loaded = []
    for gpus, top_n in ((1, 5), (2, 5), (3, 5), (4, 5), (8, 5), (1, 6), (2, 8)):
        cfg = config(top_n=top_n)
        request = validate_request({**ask(gpus), "reservationId": "r"})
        short, index = plan_request(request, pool, cfg, shortlist=True)
        full, _ = plan_request(request, pool, cfg, shortlist=False)
        assert short.ranked[:top_n] == full.ranked[:top_n], gpus
        assert short.choice == full.choice
        loaded.append(len(index.views))
    assert shortlist_size(5) in loaded, "the shortlist answered alone at least once"


def test_the_shortlist_widens_while_a_node_outside_it_could_still_rank(tenant, make_node):
    """
    s00…s49: GPU0 ══NV══ GPU1, every other pair SYS; GPU0 unbookable
             → fuller by count and NV at best, so they fill the shortlist, but any pick is SYS
    v00…v09: 8 GPUs all NV → emptier, and topology 1 puts them on top
    """
    from capacity.rollups import refresh_rollups
    from inventory.models import Device, DeviceLink

    for i in range(50):
        make_node(f"s{i:02d}", gpus=8, links="SYS")
    for i in range(10):
        make_node(f"v{i:02d}", gpus=8, links="NV")
    DeviceLink.objects.filter(node__name__startswith="s", device_a__index=0, device_b__index=1).update(
        rank="NV"
    )
    Device.objects.filter(uuid__startswith="GPU-s", index=0).update(bookable=False)
    pool = load_pool("lab-pool")
    refresh_rollups([pool.pk])
    request = validate_request({**ask(2), "reservationId": "r"})
    short, index = plan_request(request, pool, config(), shortlist=True)
    full, _ = plan_request(request, pool, config(), shortlist=False)
    assert len(index.views) == 60
    assert [r.node_id for r in short.ranked[:5]] == ["v00", "v01", "v02", "v03", "v04"]
    assert short.ranked[:5] == full.ranked[:5]


def test_a_nodes_links_bound_its_place_in_the_shortlist(tenant, make_node):
    """
    s00…s49: 8 GPUs on SYS links, GPU7 unbookable → fuller by count, but topology 0 at best
    v00…v09: 8 GPUs all NV → their link bound ranks them first: no widening
    """
    from capacity.rollups import refresh_rollups
    from inventory.models import Device

    for i in range(50):
        make_node(f"s{i:02d}", gpus=8, links="SYS")
    for i in range(10):
        make_node(f"v{i:02d}", gpus=8, links="NV")
    Device.objects.filter(uuid__startswith="GPU-s", index=7).update(bookable=False)
    pool = load_pool("lab-pool")
    refresh_rollups([pool.pk])
    request = validate_request({**ask(2), "reservationId": "r"})
    short, index = plan_request(request, pool, config(), shortlist=True)
    full, _ = plan_request(request, pool, config(), shortlist=False)
    assert len(index.views) == shortlist_size(5)
    assert short.ranked[:5] == full.ranked[:5]
    assert [r.node_id for r in short.ranked[:5]] == ["v00", "v01", "v02", "v03", "v04"]


def shortlist(request_data):
    """Return the shortlist's (name, free, total) for the request, best first."""
    pool = load_pool("lab-pool")
    request = validate_request({**request_data, "reservationId": "r"})
    index = pool_index(pool)
    taken, short, _used = plan_reads(index, request.during, request.resources)
    counts = []

    def counting(free, total, name):
        counts.append((name, free, total))
        return reach(request, config(), index)(free, total, name)

    names = [name for _, name in shortlist_order(request, pool, index, taken, short, counting)]
    # Groups of untouched nodes are scored once, by their first member.
    seen = {name: (free, total) for name, free, total in counts}
    return {(name, *seen.get(name, next((f, t) for n, f, t in counts if n <= name))) for name in names}


def test_the_shortlist_counts_only_eligible_nodes_with_enough_free_atoms(tenant, make_node):
    make_node("a", gpus=4)
    make_node("b", gpus=4)
    make_node("c", gpus=2)
    nodes.cordon("b")
    reserve(ask(3))
    assert shortlist(ask(2)) == {("c", 2, 2)}


def test_the_pool_index_follows_every_inventory_change(tenant, make_node):
    """Cordon, a device's health, a label and a new node each move the generation."""
    from inventory.models import Device

    make_node("a", gpus=2)
    make_node("b", gpus=2)
    generations = [load_pool("lab-pool").generation]
    assert shortlist(ask(2)) == {("a", 2, 2), ("b", 2, 2)}
    nodes.cordon("a")
    generations.append(load_pool("lab-pool").generation)
    assert shortlist(ask(2)) == {("b", 2, 2)}
    gpu = Device.objects.get(uuid="GPU-b-1")
    gpu.healthy = False
    gpu.save()
    generations.append(load_pool("lab-pool").generation)
    assert shortlist(ask(1)) == {("b", 1, 1)}
    nodes.uncordon("a")
    nodes.set_label("a", "rack", "r1")
    generations.append(load_pool("lab-pool").generation)
    assert shortlist({**ask(1), "nodeLabels": {"rack": "r1"}}) == {("a", 2, 2)}
    make_node("c", gpus=1)
    generations.append(load_pool("lab-pool").generation)
    assert shortlist(ask(1)) == {("a", 2, 2), ("b", 1, 1), ("c", 1, 1)}
    assert len(set(generations)) == len(generations), generations


def test_a_statement_moves_the_generation_once_whatever_rows_it_writes(tenant, make_node, pool):
    """A bulk insert of 28 links, a bulk delete, and links moved between nodes each bump once, and
    a statement that writes no row does not bump at all."""
    from django.db import connection

    from inventory.models import DeviceLink

    make_node("a", gpus=8, links=None)
    make_node("b", gpus=8)

    def bumps(write):
        with connection.cursor() as cur:
            cur.execute("SELECT last_value FROM inventory_pool_generation_seq")
            (first,) = cur.fetchone()
            write()
            cur.execute("SELECT last_value FROM inventory_pool_generation_seq")
            (last,) = cur.fetchone()
        return last - first

    links = list(DeviceLink.objects.filter(node__name="b"))
    assert len(links) == 28
    assert bumps(lambda: DeviceLink.objects.filter(node__name="b").delete()) == 1
    assert bumps(lambda: DeviceLink.objects.bulk_create(links)) == 1
    assert bumps(lambda: DeviceLink.objects.filter(node__name="b").update(rank="PIX")) == 1
    assert bumps(lambda: DeviceLink.objects.filter(node__name="nobody").update(rank="PIX")) == 0
    assert load_pool("lab-pool").generation is not None


def test_a_rolled_back_change_never_reuses_a_generation(tenant, make_node):
    from django.db import transaction

    make_node("a", gpus=2)
    before = load_pool("lab-pool").generation

    class Abort(Exception):
        pass

    with pytest.raises(Abort), transaction.atomic():
        nodes.cordon("a")
        inside = load_pool("lab-pool").generation
        raise Abort
    assert load_pool("lab-pool").generation == before
    nodes.set_maintenance("a", True)
    assert load_pool("lab-pool").generation not in {before, inside}


def test_the_shortlist_leaves_out_nodes_short_of_a_claimed_scalar(tenant, make_node):
    """
    roomy: vcpu 32, nothing claimed   tight: vcpu 32, 28 claimed in the window   bare: no vcpu row at all
    """
    make_node("roomy", gpus=2, vcpu=32)
    tight = make_node("tight", gpus=2, vcpu=32)
    make_node("bare", gpus=2)
    claim(tight, 28, start=2, hours=4)
    assert {name for name, *_ in shortlist({**ask(1), "resources": {"vcpu": 8}})} == {"roomy"}
    assert {name for name, *_ in shortlist({**ask(1), "resources": {"vcpu": 4}})} == {"roomy", "tight"}
    assert {name for name, *_ in shortlist(ask(1))} == {"roomy", "tight", "bare"}
    # A window after the claim ends sees the whole room.
    later = {**ask(1, start=6, hours=2), "resources": {"vcpu": 32}}
    assert {name for name, *_ in shortlist(later)} == {"roomy", "tight"}


def claim(node, amount, start=0, hours=24, resource="vcpu"):
    """Claim a scalar on a node for an instance's allocation, as the commit would."""
    from capacity.models import Allocation, ScalarClaim

    lower, upper = NOW + timedelta(hours=start), NOW + timedelta(hours=start + hours)
    allocation = Allocation.objects.create(
        instance_id=f"vm-{node.name}", node=node, starts_at=lower, ends_at=upper, resources={resource: amount}
    )
    ScalarClaim.objects.create(
        allocation=allocation, node=node, resource=resource, amount=amount, during=(lower, upper)
    )


def test_resource_rows_move_the_generation_but_claims_do_not(tenant, make_node):
    from inventory.models import NodeResource

    node = make_node("a", gpus=1, vcpu=8)
    before = load_pool("lab-pool").generation
    claim(node, 4)
    assert load_pool("lab-pool").generation == before, "a claim is not inventory"
    NodeResource.objects.filter(node__name="a").update(ratio=2.0)
    resized = load_pool("lab-pool").generation
    assert resized != before
    NodeResource.objects.create(node=NodeResource.objects.get().node, resource="memoryGiB", allocatable=64)
    assert load_pool("lab-pool").generation not in {before, resized}


def test_a_process_keeps_the_indexes_of_a_bounded_number_of_pools(tenant, site, make_node, monkeypatch):
    from capacity.placers import index
    from inventory.models import Pool

    monkeypatch.setattr(index, "MAX_CACHED_POOLS", 2)
    monkeypatch.setattr(index, "_CACHE", {})
    slugs = ["lab-a", "lab-b", "lab-c"]
    for slug in slugs:
        make_node(f"{slug}-n", gpus=1, pool=Pool.objects.create(slug=slug, name=slug, site=site))
        pool_index(load_pool(slug))
    assert sorted(index._CACHE) == sorted(
        Pool.objects.filter(slug__in=slugs[1:]).values_list("pk", flat=True)
    )


def test_a_preview_shows_the_same_ten_candidates_as_planning_every_node(tenant, make_node):
    """
    v00…v04: 8 GPUs all NV                          → 1.25 for 2 GPUs: the top 5
    s00…s59: GPU0 ══PIX══ GPU1, all else SYS, GPU0 unbookable
             → fuller, and PIX bounds their reach at 1.175, but any pick is SYS: 0.375
    p00…p09: 8 GPUs all PXB                          → 0.85: truly places 6 to 10
    Guarding only the top 5, the shortlist (5 v, 43 s) would show five s nodes at places 6 to 10.
    """
    from capacity import services
    from capacity.rollups import refresh_rollups
    from inventory.models import Device, DeviceLink

    for i in range(5):
        make_node(f"v{i:02d}", gpus=8, links="NV")
    for i in range(60):
        make_node(f"s{i:02d}", gpus=8, links="SYS")
    for i in range(10):
        make_node(f"p{i:02d}", gpus=8, links="PXB")
    DeviceLink.objects.filter(node__name__startswith="s", device_a__index=0, device_b__index=1).update(
        rank="PIX"
    )
    Device.objects.filter(uuid__startswith="GPU-s", index=0).update(bookable=False)
    refresh_rollups([load_pool("lab-pool").pk])
    shown = [c["nodeId"] for c in services.preview(ask(2), now=NOW, config=config()).candidates]
    everything = [
        c["nodeId"] for c in services.preview(ask(2), now=NOW, config=config(), explain=True).candidates
    ]
    assert shown == everything
    assert shown == [f"v{i:02d}" for i in range(5)] + [f"p{i:02d}" for i in range(5)]
