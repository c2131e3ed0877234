"""The reservation page shows what was asked, when it was created and ended, and every condition."""

import html as html_lib
import json
import re
from datetime import timedelta

import pytest
from django.utils import timezone

from capacity import services
from capacity.models import Reservation


@pytest.fixture
def lab(make_node, tenant):
    return make_node("node-a", gpus=2)


def test_the_reservation_page_shows_the_request_as_asked_and_when_it_was_created(alice, lab, book):
    reservation = book("acme", gpus=1, imageId="ubuntu-24.04")
    page = alice.get(f"/reservations/{reservation.pk}/").text
    assert re.search(r"<dt>Created</dt><dd>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC</dd>", page)
    asked = re.search(r'<pre class="request" id="asked">(.*?)</pre>', page, re.S).group(1)
    assert json.loads(html_lib.unescape(asked)) == reservation.request["input"]
    assert "None: nothing to report." in page


def test_a_released_reservation_says_when_and_a_pending_one_lists_its_condition(alice, lab, book):
    done = book("acme", gpus=1)
    services.release(done.pk)
    page = alice.get(f"/reservations/{done.pk}/").text
    assert re.search(r"<dt>Released</dt><dd>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC</dd>", page)
    waiting = book("acme", gpus=3)
    page = alice.get(f"/reservations/{waiting.pk}/").text
    table = re.search(r'<table class="compact" id="conditions">.*?</table>', page, re.S).group(0)
    assert "<code>Unschedulable</code>" in table and "NoFit" in table
    assert "no node fits (1 node): 1 × fits: 2 of 3 gpu free" in table


def history_rows(page: str) -> list[tuple[str, str, str]]:
    """Return (status, condition, reason) of each row of the history table, as read."""
    table = re.search(r'<table class="compact" id="condition-history">.*?</table>', page, re.S).group(0)
    rows = []
    for row in re.findall(r"<tr><td class=\"nowrap\">.*?</tr>", table, re.S):
        cells = [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
        rows.append((cells[1].split()[-1], cells[2], cells[3]))
    return rows


def test_the_reservation_page_shows_its_whole_condition_history_oldest_first(alice, lab, book, make_node):
    book("acme", gpus=2)
    waiting = book("acme", gpus=1)
    assert waiting.status == "pending"
    make_node("node-b", gpus=1)  # room arrives: the retry places it
    assert services.retry_pending([lab.pool_id]) == 1
    services.release(waiting.pk)
    page = alice.get(f"/reservations/{waiting.pk}/").text
    assert history_rows(page) == [
        ("pending", "none", ""),  # as it was created, before the placer answered
        ("pending", "Unschedulable", "NoFit"),
        ("placed", "none", ""),
        ("released", "none", ""),
    ]
    # The message of the condition it no longer has is still there, with its time.
    table = re.search(r'<table class="compact" id="condition-history">.*?</table>', page, re.S).group(0)
    assert "no node fits (1 node): 1 × fits: 0 of 1 gpu free" in table
    times = re.findall(r'<td class="nowrap">(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)</td>', table)
    assert len(times) == 4 and times == sorted(times)


def facts(page: str) -> dict[str, str]:
    return dict(re.findall(r"<dt>(\w[\w ]*)</dt><dd>(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) UTC</dd>", page))


def test_history_is_in_the_order_things_happened_and_nothing_changed_before_it_was_created(alice, lab):
    # A writer's clock behind the insert's: the demo books past windows as if at their start and
    # marks idle as of a whole minute; a request's own moment is taken before its insert.
    back = timezone.now() - timedelta(minutes=30)
    ask = {
        "tenantId": "acme",
        "poolId": "lab-pool",
        "devices": [{"class": "gpu", "count": 1}],
        "duration": "1d",
    }
    placed = services.reserve(ask, now=back).reservation
    assert placed.status == "placed" and placed.updated_at >= placed.created_at
    stored = Reservation.objects.get(pk=placed.pk)
    assert stored.updated_at >= stored.created_at
    Reservation.objects.filter(pk=placed.pk).update(
        conditions=[{"type": "Idle", "status": "True", "reason": "LowUtilization", "message": "idle"}],
        updated_at=stored.created_at.replace(second=0, microsecond=0) - timedelta(seconds=1),
    )
    page = alice.get(f"/reservations/{placed.pk}/").text
    assert history_rows(page) == [
        ("pending", "none", ""),
        ("placed", "none", ""),
        ("placed", "Idle", "LowUtilization"),
    ]
    shown = facts(page)
    assert shown["Last changed"] >= shown["Created"]
    table = re.search(r'<table class="compact" id="condition-history">.*?</table>', page, re.S).group(0)
    times = re.findall(r'<td class="nowrap">(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)</td>', table)
    assert times == sorted(times) and times[0] == shown["Created"]
