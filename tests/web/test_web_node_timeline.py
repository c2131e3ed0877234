"""The node page's timeline moves through time and counts the reservations still to come."""

import dataclasses
import re
from datetime import UTC, datetime

import pytest

from capacity import services
from capacity.conf import placer_config

from web_helpers import HX, error_next_to, field_block


def ms(text: str) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp() * 1000)


def book_during(gpus: int, start: str, end: str, tenant: str = "acme"):
    data = {
        "tenantId": tenant,
        "poolId": "lab-pool",
        "devices": [{"class": "gpu", "count": gpus}],
        "during": {"start": ms(start), "end": ms(end)},
    }
    return services.reserve(data, config=dataclasses.replace(placer_config(), random=None)).reservation


def bar_titles(html: str) -> list[str]:
    return re.findall(r'<span class="tl-bar[^"]*" style="[^"]*" title="([^"]+)"', html)


@pytest.fixture
def lab(make_node, tenant, other_tenant):
    return make_node("node-a", gpus=2)


@pytest.fixture
def february(lab):
    return [book_during(1, "2027-02-01", "2027-02-03"), book_during(2, "2027-02-10", "2027-02-11")]


def test_bookings_in_february_are_not_on_todays_timeline_but_are_from_february(op, february):
    first, second = february
    today = op.get("/nodes/node-a/").text
    assert bar_titles(today) == []
    html = op.get("/nodes/node-a/?from=2027-01-31").text
    assert "Jan 31 – Feb 09" in html
    assert [t.split(":")[0] for t in bar_titles(html)] == [f"reservation {first.pk} (acme)"]
    # The now line belongs to today's window only.
    assert "now-marker" in today and "now-marker" not in html
    later = op.get("/nodes/node-a/?from=2027-02-07").text
    assert {t.split(":")[0] for t in bar_titles(later)} == {f"reservation {second.pk} (acme)"}


def test_earlier_later_and_today_links_move_a_week_with_href_and_hx_get(op, february):
    html = op.get("/nodes/node-a/?from=2027-02-07").text
    nav = re.search(r'<nav class="timeline-nav".*?</nav>', html, re.S).group(0)
    for text, href in (
        ("← Earlier", "/nodes/node-a/?from=2027-01-31"),
        ("Today", "/nodes/node-a/"),
        ("Later →", "/nodes/node-a/?from=2027-02-14"),
    ):
        link = re.search(rf'<a class="button small" href="([^"]+)" hx-get="([^"]+)"[^>]*>{text}</a>', nav)
        assert link and link.group(1) == link.group(2) == href, text


def test_a_timeline_link_answers_htmx_with_the_timeline_alone(op, february):
    response = op.get("/nodes/node-a/?from=2027-01-31", HTTP_HX_TARGET="node-timeline", **HX)
    assert response.text.lstrip().startswith('<section class="card" id="node-timeline">')
    assert "node-panel" not in response.text
    assert "HX-Request" in response["Vary"]


def test_the_page_counts_upcoming_reservations_and_says_when_the_next_starts(alice, february):
    html = alice.get("/nodes/node-a/").text
    upcoming = re.search(r'<p class="upcoming" id="upcoming">(.*?)</p>', html, re.S).group(1)
    assert "<strong>2 upcoming reservations</strong> on this node" in upcoming
    assert 'href="/nodes/node-a/?from=2027-02-01"' in upcoming and "Feb 01 00:00 UTC" in upcoming
    # Free now stays about now.
    assert "2 of 2 whole GPUs bookable now" in html


def upcoming_line(html: str) -> str:
    return re.sub(
        r"<[^>]+>", "", re.search(r'<p class="upcoming" id="upcoming">(.*?)</p>', html, re.S).group(1)
    )


def test_a_node_with_nothing_running_or_to_come_says_so(op, lab):
    assert upcoming_line(op.get("/nodes/node-a/").text) == "No running or upcoming reservations on this node."


def test_a_node_running_work_never_reads_as_having_no_reservations(op, alice, lab, book):
    book("acme", gpus=1)  # running now: not upcoming, but on the node
    for client in (op, alice):
        html = client.get("/nodes/node-a/").text
        assert upcoming_line(html) == "1 running reservation on this node; none upcoming."
        assert "No running or upcoming" not in html
    # The operators' panel counts the same reservations.
    assert "1 running reservation is on this node" in op.get("/nodes/node-a/").text


def test_running_and_upcoming_reservations_are_counted_together(op, february, book):
    book("acme", gpus=1)
    line = upcoming_line(op.get("/nodes/node-a/").text)
    assert line == "1 running and 2 upcoming reservations on this node; the next starts Feb 01 00:00 UTC"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("february", "must be a date, YYYY-MM-DD"),
        ("2027-02-30", "must be a date, YYYY-MM-DD"),
        ("9999-12-31", "must be a date from 2000-01-01 to 2099-12-31"),
        ("0001-01-01", "must be a date from 2000-01-01 to 2099-12-31"),
    ],
)
def test_a_bad_from_shows_its_error_next_to_the_field_and_todays_timeline(op, lab, value, message):
    response = op.get(f"/nodes/node-a/?from={value}")
    assert response.status_code == 200
    assert error_next_to(response.text, "from") == message
    assert f'value="{value}"' in field_block(response.text, "from")
    assert "two days back to a week ahead" in response.text
