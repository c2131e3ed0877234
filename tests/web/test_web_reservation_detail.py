"""The reservation page shows what was asked, when it was created and ended, and every condition."""

import html as html_lib
import json
import re

import pytest

from capacity import services


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
