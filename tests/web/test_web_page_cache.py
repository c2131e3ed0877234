"""The pool page's nodes section kept in the cache: fresh after every write, per viewer, and cheap.

Transactional where a write's visibility is the point: the booking version is bumped as a
transaction commits, as a request's does.
"""

import re

import pytest
from django.conf import settings
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from capacity import services
from capacity.views.page_cache import CSRF_PLACEHOLDER, pool_versions
from inventory.models import Pool

from web_helpers import HX, is_full_page

POOL = "/pools/lab-pool/"


def grid_of(html: str) -> str:
    return re.search(r'<section id="nodes".*?</section>', html, re.S).group(0)


@pytest.mark.django_db(transaction=True)
def test_a_booking_and_its_release_show_at_once_to_the_writer_and_to_another_reader(
    two_hosts, book, alice, op
):
    before_alice = alice.get(POOL).text
    op.get(POOL)  # both kept now
    assert grid_of(alice.get(POOL).text) == grid_of(before_alice)
    reservation = book("acme", gpus=2)
    mine = f"reservation {reservation.pk} (acme)"
    assert mine in grid_of(alice.get(POOL).text)
    assert mine in grid_of(op.get(POOL).text)
    services.release(reservation.pk)
    assert mine not in grid_of(alice.get(POOL).text)
    assert mine not in grid_of(op.get(POOL).text)


@pytest.mark.django_db(transaction=True)
def test_a_commit_bumps_the_booking_version_and_a_rollback_does_not(two_hosts, book):
    from django.db import transaction

    pool = Pool.objects.get(slug="lab-pool")
    generation, first = pool_versions(pool.pk)
    book("acme", gpus=2)
    _, second = pool_versions(pool.pk)
    assert generation is not None and second is not None and second != first
    with pytest.raises(RuntimeError), transaction.atomic():
        book("acme", gpus=1)
        raise RuntimeError("roll back")
    assert pool_versions(pool.pk) == (generation, second)


@pytest.mark.django_db(transaction=True)
def test_each_placement_bumps_the_booking_version_through_its_allocation_alone(two_hosts, book):
    """A commit's device bookings and claims queue no bump of their own (capacity 0049): its
    allocation's one event bumps the pool, at every placement, whole GPUs or one."""
    pool = Pool.objects.get(slug="lab-pool")
    book("acme", gpus=1)  # the pool's version row exists from here
    seen = [pool_versions(pool.pk)[1]]
    for gpus in (2, 1, 2):
        book("acme", gpus=gpus)
        seen.append(pool_versions(pool.pk)[1])
    assert None not in seen and len(set(seen)) == 4
    with connection.cursor() as cur:
        cur.execute("SELECT current_setting('berth.bookings_bumped_by_allocation', true)")
        assert cur.fetchone()[0] in (None, "")  # the commit leaves the setting off behind it


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("first", ["globex", "acme"])
def test_a_tenant_never_reads_another_tenants_kept_section(two_hosts, book, alice, bob, first):
    reservation = book("acme", gpus=2)
    readers = {"acme": alice, "globex": bob}
    order = [first, *(t for t in readers if t != first)]
    pages = {tenant: grid_of(readers[tenant].get(POOL).text) for tenant in order}
    pages |= {f"{tenant} again": grid_of(readers[tenant].get(POOL).text) for tenant in order}
    for tenant in ("acme", "acme again"):
        assert f"reservation {reservation.pk} (acme)" in pages[tenant]
    for tenant in ("globex", "globex again"):
        assert "booked by another tenant" in pages[tenant]
        assert "acme" not in pages[tenant]
        assert (
            f"reservation {reservation.pk}" not in pages[tenant] and f"#{reservation.pk}" not in pages[tenant]
        )


@pytest.mark.django_db(transaction=True)
def test_a_kept_section_carries_each_readers_own_csrf_token(two_hosts, op, operators_group):
    from django.contrib.auth.models import User

    op.get(POOL)  # kept with the placeholder, drawn for olga
    other = User.objects.create_user("oscar", password="pw-oscar-123")
    other.groups.add(operators_group)
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(other)
    html = strict.get(POOL).text
    assert CSRF_PLACEHOLDER not in html
    token = re.search(
        r'action="/nodes/node-a/row/cordon/".*?name="csrfmiddlewaretoken" value="([^"]+)"', html, re.S
    ).group(1)
    response = strict.post("/nodes/node-a/row/cordon/", {"csrfmiddlewaretoken": token, "reason": "fan"})
    assert response.status_code == 302
    # The cordon is a node write: its pool's generation moves and the row reads it at once.
    assert "cordoned" in grid_of(op.get(POOL).text)


def test_htmx_gets_the_kept_section_alone_and_the_page_gets_it_whole(two_hosts, op):
    whole = op.get(POOL).text
    partial = op.get(POOL, **HX).text
    assert is_full_page(whole) and not is_full_page(partial)
    assert partial.lstrip().startswith('<section id="nodes"')
    assert grid_of(partial).replace('hx-swap-oob="true"', "") != ""
    assert is_full_page(op.get(POOL).text)


def test_a_kept_read_costs_one_indexed_statement_past_the_rest_of_the_page(two_hosts, book, op):
    book("acme", gpus=1)
    # Twice: the chart is kept until the minute it names ends, and a minute may end between.
    op.get(POOL)
    op.get(POOL)
    with CaptureQueriesContext(connection) as captured:
        again = op.get(POOL)
    assert again.status_code == 200
    statements = [q["sql"] for q in captured.captured_queries]
    # The pool's generation and booking version in one statement, then the cache's read: a
    # statement with the database cache (the default), none with Redis (BERTH_REDIS_URL).
    in_database = settings.CACHES["default"]["BACKEND"].endswith("DatabaseCache")
    assert sum("capacity_poolbookingversion" in s for s in statements) == 1
    # The nodes, the chart, the Shares and Policy sections and the filter form, in one statement.
    assert sum("berth_cache" in s for s in statements) == in_database
    # None of the sections' own reads: the node count and rows, taints, the grid's bookings,
    # claims; shares, policy, the tenants the share form offers.
    drawn = (
        'COUNT(*) AS "__count" FROM "inventory_node"',
        '"inventory_nodetaint"."id"',
        '"capacity_devicebooking"."device_id" AS "device_id"',
        "FROM capacity_scalarclaim",
        'FROM "capacity_poolshare"',
        'FROM "capacity_poolpolicy"',
        'FROM "inventory_tenant" ORDER BY',
    )
    for marker in drawn:
        assert not any(marker in s for s in statements), marker
    # The bookings kept when idle are read for every page (reservations do not move the version).
    assert sum("keep_when_idle" in s for s in statements) == 1
    # The teams with a share and no GPU quota would be read for every page too (a quota moves no
    # version), but this pool has no shares, so no team can be one: nothing is read for them.
    assert not any('"capacity_quota"' in s for s in statements)
    # The session with its user, groups and tenants (one statement: identity/sessions.py), the pool
    # and its tenants, the versions and the kept list.
    assert len(statements) == 5 + in_database


@pytest.mark.django_db(transaction=True)
def test_moving_ended_bookings_to_history_leaves_the_version_and_a_release_moves_it(two_hosts, settings):
    import dataclasses
    from datetime import UTC, datetime, timedelta

    from capacity.archive import move_history
    from capacity.conf import placer_config

    now = datetime.now(UTC)
    old = now - settings.HISTORY_AFTER - timedelta(days=3)
    config = dataclasses.replace(placer_config(), random=None)
    ended = services.reserve(
        {
            "tenantId": "acme",
            "poolId": "lab-pool",
            "devices": [{"class": "gpu", "count": 2}],
            "during": {
                "start": int(old.timestamp() * 1000),
                "end": int((old + timedelta(hours=1)).timestamp() * 1000),
            },
        },
        now=old,
        config=config,
    ).reservation
    services.release(ended.pk, now=now)
    pool = Pool.objects.get(slug="lab-pool")
    before = pool_versions(pool.pk)
    assert move_history(now).bookings == 2
    assert pool_versions(pool.pk) == before  # nothing a kept page draws changed
    running = services.reserve(
        {
            "tenantId": "acme",
            "poolId": "lab-pool",
            "devices": [{"class": "gpu", "count": 1}],
            "duration": "1h",
        },
        config=config,
    )
    bumped = pool_versions(pool.pk)
    assert bumped != before
    services.release(running.reservation.pk)
    assert pool_versions(pool.pk) != bumped


def test_zero_seconds_keeps_nothing_and_reads_nothing_kept(two_hosts, op, settings):
    op.get(POOL)  # kept
    settings.PAGE_CACHE_SECONDS = 0
    with CaptureQueriesContext(connection) as captured:
        html = op.get(POOL).text
    statements = [q["sql"] for q in captured.captured_queries]
    assert not any("berth_cache" in s or "capacity_poolbookingversion" in s for s in statements)
    assert any('"capacity_devicebooking"."device_id" AS "device_id"' in s for s in statements)
    assert CSRF_PLACEHOLDER not in html and 'name="csrfmiddlewaretoken"' in html


def test_the_free_gpus_filter_is_never_kept(two_hosts, op):
    url = POOL + "?free_gpus=1"
    op.get(url)
    with CaptureQueriesContext(connection) as captured:
        op.get(url)
    # Drawn again: which nodes have a free GPU changes as bookings on nodes not drawn end.
    assert any(
        '"capacity_devicebooking"."device_id" AS "device_id"' in q["sql"] for q in captured.captured_queries
    )
