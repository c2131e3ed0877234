"""A pending reservation in a pool with shares says where it stands in the fair queue (`queue`)."""

from inventory.models import Pool, Tenant
from policy.models import PoolShare


def share(tenant, guaranteed):
    PoolShare.objects.create(
        pool=Pool.objects.get(slug="lab-pool"),
        tenant=Tenant.objects.get(slug=tenant),
        guaranteed_gpus=guaranteed,
    )


def fill(client, ask):
    """Book both 4-GPU hosts of lab-pool for a day: what is asked next waits."""
    for _ in range(2):
        assert client.post("/api/v1/reservations", ask(4), format="json").json()["status"] == "placed"


def test_a_pending_reservation_in_a_pool_with_shares_says_its_place(
    as_acme, as_globex, lab, ask, other_tenant
):
    share("acme", 4)
    share("globex", 2)
    fill(as_acme, ask)
    first = as_acme.post("/api/v1/reservations", ask(1), format="json").json()
    # Past its guarantee of 2, it waits rather than reclaims what acme borrowed.
    theirs = as_globex.post("/api/v1/reservations", ask(3, tenant="globex"), format="json").json()
    # Created pending, the 201 says it already.
    assert first["status"] == "pending"
    assert first["queue"] == {"position": 1, "of": 1, "fairShare": 0.0}
    # acme's eight GPUs booked from then count a few milliseconds' worth by now (0.0 at four
    # decimals, yet above globex's nothing): globex's request goes first.
    assert theirs["queue"] == {"position": 1, "of": 2, "fairShare": 0.0}
    again = as_acme.get(f"/api/v1/reservations/{first['id']}").json()
    assert again["queue"] == {"position": 2, "of": 2, "fairShare": 0.0}
    listed = {r["id"]: r for r in as_acme.get("/api/v1/reservations").json()["results"]}
    assert listed[first["id"]]["queue"] == again["queue"]
    assert all("queue" not in r for r in listed.values() if r["status"] == "placed")
    assert "globex" not in str(listed)  # the count and acme's own figure: nothing of globex


def test_a_tenant_without_a_guarantee_waits_after_those_with_one(as_acme, as_globex, lab, ask, other_tenant):
    share("acme", 4)  # globex has no row: guaranteed 0, no figure
    fill(as_acme, ask)
    theirs = as_globex.post("/api/v1/reservations", ask(1, tenant="globex"), format="json").json()
    mine = as_acme.post("/api/v1/reservations", ask(1), format="json").json()
    assert mine["queue"] == {"position": 1, "of": 2, "fairShare": 0.0}
    assert as_globex.get(f"/api/v1/reservations/{theirs['id']}").json()["queue"] == {
        "position": 2,
        "of": 2,
        "fairShare": None,
    }


def test_a_pool_without_shares_has_no_queue_field(as_acme, lab, ask):
    fill(as_acme, ask)
    waiting = as_acme.post("/api/v1/reservations", ask(1), format="json").json()
    assert waiting["status"] == "pending" and "queue" not in waiting
    assert "queue" not in as_acme.get(f"/api/v1/reservations/{waiting['id']}").json()


def test_listing_pending_work_in_a_pool_with_shares_runs_the_same_queries_for_many_as_for_one(
    as_acme, lab, ask, django_assert_max_num_queries
):
    share("acme", 4)
    fill(as_acme, ask)
    as_acme.post("/api/v1/reservations", ask(1), format="json")
    as_acme.get("/api/v1/reservations")  # warm the user's scope and content types
    with django_assert_max_num_queries(10) as one:
        as_acme.get("/api/v1/reservations")
    queries_for_one = len(one)
    for _ in range(6):
        as_acme.post("/api/v1/reservations", ask(1), format="json")
    with django_assert_max_num_queries(queries_for_one):
        data = as_acme.get("/api/v1/reservations").json()
    assert sorted(r["queue"]["position"] for r in data["results"] if "queue" in r) == [1, 2, 3, 4, 5, 6, 7]
