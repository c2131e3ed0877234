"""Every input limit holds before any lock is taken: INVALID_INPUT with a clear message, nothing written."""

import pytest

from capacity.models import Reservation
from capacity.placement import CapacityError
from inventory import services as nodes
from inventory.errors import InventoryError

from booking import HOUR, MS, NOW, ask, reserve


def refused(data, **kw):
    with pytest.raises(CapacityError) as err:
        reserve(data, **kw)
    assert err.value.code == "INVALID_INPUT"
    assert not Reservation.objects.exists()
    return err.value.message


def test_a_window_must_not_lie_in_the_past(tenant, make_node):
    make_node("node-a", gpus=1)
    assert refused(ask(1, start=-48, hours=24)) == "during.end is in the past"
    assert refused({**ask(1), "during": {"start": 0, "end": 1000}}) == "during.end is in the past"
    assert refused(ask(1, start=-1, hours=4)) == "during.start must not be more than 5 minutes before now"
    # A few minutes late is fine: a clock a little behind, a form filled in slowly.
    late = {**ask(1), "during": {"start": MS - 4 * 60_000, "end": MS + HOUR}}
    assert reserve(late).reservation.status == "placed"


def test_during_obeys_the_same_366_day_limit_as_duration(tenant, make_node):
    make_node("node-a", gpus=1)
    far = {**ask(1), "during": {"start": MS, "end": 253_402_300_799_999}}
    assert refused(far) == "during must be at most 366d long"
    year = {**ask(1), "during": {"start": MS, "end": MS + 367 * 24 * HOUR}}
    assert refused(year) == "during must be at most 366d long"
    assert reserve({**ask(1), "during": {"start": MS, "end": MS + 366 * 24 * HOUR}}).reservation.pk


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"resources": {f"r{i}": 1 for i in range(33)}}, "resources: at most 32 resources"),
        ({"imageId": "i" * 201}, "imageId must be at most 200 characters"),
        ({"imageId": "img\x00"}, "imageId must not contain control characters"),
        ({"tenantId": "acme\n"}, "tenantId must not contain control characters"),
        ({"excludeNodes": [f"n{i}" for i in range(257)]}, "excludeNodes: at most 256 nodes"),
        (
            {"idempotencyKey": "key\n"},
            "idempotencyKey must be 1 to 200 letters, digits, '.', '_', ':' or '-'",
        ),
        (
            {"idempotencyKey": "k" * 201},
            "idempotencyKey must be 1 to 200 letters, digits, '.', '_', ':' or '-'",
        ),
        (
            {"devices": [{"class": "gpu", "count": 1, "selector": "gpuProduct in (" + "a" * 70_000 + ")"}]},
            "the request must be at most 65536 bytes as JSON",
        ),
    ],
)
def test_sizes_and_characters_are_bounded(tenant, make_node, extra, message):
    make_node("node-a", gpus=1)
    assert refused({**ask(1), **extra}) == message


@pytest.mark.parametrize("duration", ["٣d", "²h", "1d\n", "1 d", "+1d"])
def test_a_duration_takes_ascii_digits_only(tenant, make_node, duration):
    make_node("node-a", gpus=1)
    data = {k: v for k, v in ask(1).items() if k != "during"} | {"duration": duration}
    assert refused(data) == "duration must look like 30m, 12h, 3d or 2w"


def test_keys_with_a_trailing_newline_are_refused_for_labels_and_taints(tenant, make_node):
    make_node("node-a", gpus=1)
    for call in (
        lambda: nodes.set_label("node-a", "nl.key\n", "x"),
        lambda: nodes.add_taint("node-a", "nl.key\n", "x"),
        lambda: nodes.set_label("node-a", "rack", "r1\x00"),
        lambda: nodes.add_taint("node-a", "team", "x" * 254),
    ):
        with pytest.raises(InventoryError) as err:
            call()
        assert err.value.code == "INVALID_INPUT"
    assert not nodes.remove_taint("node-a", "nl.key\n")


def test_an_archived_pool_answers_pending_before_quota_or_admission(tenant, make_node, pool):
    """Quota 0 and a policy that refuses everyone: the archived pool still answers pending."""
    from capacity import services
    from capacity.models import Quota
    from capacity.placement import define_scheduler_plugin

    from booking import config

    make_node("node-a", gpus=1)
    Quota.objects.create(tenant=tenant, resource="gpu", limit=0)
    pool.archived = True
    pool.save()

    def deny(request, context):
        raise CapacityError("FORBIDDEN", "policy says no")

    result = services.reserve(
        ask(1),
        now=NOW,
        admission={"identityKind": "user"},
        config=config(plugins=(define_scheduler_plugin("deny", admit=deny),)),
    )
    assert result.reservation.status == "pending"
    assert result.reservation.conditions[0]["message"] == "the pool is archived"
    pool.archived = False
    pool.save()
    with pytest.raises(CapacityError) as err:
        services.reserve(
            ask(1),
            now=NOW,
            admission={"identityKind": "user"},
            config=config(plugins=(define_scheduler_plugin("deny", admit=deny),)),
        )
    assert (err.value.code, err.value.message) == ("FORBIDDEN", "policy says no")
