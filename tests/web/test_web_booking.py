"""Preview, booking and releasing from the browser; service refusals show next to the field they name."""

import re

import pytest

from capacity.models import Allocation, DeviceBooking, Quota, Reservation
from inventory import services as nodes

from web_helpers import HX, error_next_to

BASE = {"tenant": "acme", "pool": "lab-pool", "count": "1", "device_class": "gpu", "duration": "1d"}


@pytest.fixture
def lab(make_node, tenant):
    for name in ("node-a", "node-b", "node-c"):
        make_node(name, gpus=4)


def no_rows():
    return not (Reservation.objects.exists() or Allocation.objects.exists() or DeviceBooking.objects.exists())


def test_the_preview_lists_candidates_with_every_scorers_score(op, lab, book):
    book("acme", gpus=2)  # binpack now prefers node-a
    html = op.post("/preview/", {**BASE, "count": "2"}).text
    table = re.search(r'<table class="ranked">.*?</table>', html, re.S).group(0)
    for scorer in ("binpack", "topology", "fragmentation", "spread"):
        assert f'<th class="num">{scorer}</th>' in table
    ranked = re.findall(r'<a href="/nodes/([\w-]+)/">', table)
    assert ranked == ["node-a", "node-b", "node-c"]
    assert "GPU2" in table and "GPU3" in table
    assert "Fits — 3 of 3 nodes could take it" in html
    assert no_rows() is False and Reservation.objects.count() == 1  # the preview booked nothing


def test_the_preview_lists_every_rejected_node_grouped_like_the_pending_summary(op, lab, book):
    book("acme", gpus=3)
    book("acme", gpus=3)
    nodes.cordon("node-c")
    html = op.post("/preview/", {**BASE, "count": "4"}).text
    summary = "no node fits (3 nodes): 2 × fits: 1 of 4 gpu free; 1 × cordoned"
    assert f'<p class="reason" id="pending-reason"><code>{summary}</code></p>' in html
    groups = re.findall(
        r"<summary><strong>(\d+) ×</strong> ([^<]+?)(?: <span[^>]*>[^<]*</span>)?</summary>", html
    )
    assert groups == [("2", "fits: 1 of 4 gpu free"), ("1", "cordoned")]
    details = re.findall(
        r'<a href="/nodes/([\w-]+)/">\1</a></td><td><code>(\w+)</code></td><td>([^<]+)</td>', html
    )
    assert sorted(details) == [
        ("node-a", "fits", "1 of 4 gpu free"),
        ("node-b", "fits", "1 of 4 gpu free"),
        ("node-c", "eligible", "cordoned"),
    ]
    assert "<details" in html


def test_the_preview_of_a_fitting_request_still_explains_the_rejected_nodes(op, lab):
    nodes.cordon("node-c")
    html = op.post("/preview/", BASE).text
    assert "Rejected: 1 node" in html
    assert "<summary><strong>1 ×</strong> cordoned</summary>" in html


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("count", "0", "the GPU count must be a positive integer"),
        ("count", "65", "devices: at most 64 devices in all, got 65"),
        ("device_class", "9gpu", "the class must start with a letter"),
        ("selector", "vramGiB >=", "selector"),
        ("duration", "soon", "duration must look like 30m, 12h, 3d or 2w"),
        ("vcpu", "-1", "vCPU must be a non-negative integer"),
    ],
)
def test_service_refusals_show_next_to_their_field_and_leave_no_rows(op, lab, field, value, message):
    for url in ("/preview/", "/book/"):
        html = op.post(url, {**BASE, field: value}).text
        assert message in error_next_to(html, field), url
        html = op.post(url, {**BASE, field: value}, **HX).text
        assert message in error_next_to(html, field), url
        # The form's words, never the API's paths.
        assert not re.search(r"devices\[0\]|during\.|resources\.", error_next_to(html, field)), url
    assert no_rows()


def test_a_window_error_names_the_end_field(op, lab):
    data = {**BASE, "duration": "", "start": "2030-01-02T10:00", "end": "2030-01-02T09:00"}
    html = op.post("/book/", data).text
    assert "the end must be after the start" in error_next_to(html, "end")
    assert no_rows()


def test_a_start_and_an_end_book_that_window_whatever_the_duration_field_holds(op, lab):
    op.post("/book/", {**BASE, "start": "2030-01-02T10:00", "end": "2030-01-03T10:00"})
    reservation = Reservation.objects.get()
    assert (reservation.starts_at.isoformat(), reservation.ends_at.isoformat()) == (
        "2030-01-02T10:00:00+00:00",
        "2030-01-03T10:00:00+00:00",
    )


def test_a_start_with_the_duration_books_start_plus_duration(op, lab):
    op.post("/book/", {**BASE, "duration": "12h", "start": "2030-01-02T10:00"})
    reservation = Reservation.objects.get()
    assert reservation.ends_at.isoformat() == "2030-01-02T22:00:00+00:00"
    assert "during" in reservation.request["input"] and "duration" not in reservation.request["input"]


def test_a_start_without_an_end_or_a_duration_asks_for_one_next_to_the_end(op, lab):
    html = op.post("/book/", {**BASE, "duration": "", "start": "2030-01-02T10:00"}).text
    assert error_next_to(html, "end") == "give an end or a duration"
    html = op.post("/book/", {**BASE, "duration": "", "end": "2030-01-02T10:00"}).text
    assert error_next_to(html, "start") == "give a start with the end"
    assert no_rows()


def test_a_window_books_that_window(op, lab):
    data = {**BASE, "duration": "", "start": "2030-01-02T10:00", "end": "2030-01-03T10:00"}
    response = op.post("/book/", data)
    reservation = Reservation.objects.get()
    assert response["Location"] == f"/reservations/{reservation.pk}/"
    assert reservation.starts_at.isoformat() == "2030-01-02T10:00:00+00:00"
    assert reservation.ends_at.isoformat() == "2030-01-03T10:00:00+00:00"


def test_a_quota_refusal_is_a_form_error_and_leaves_no_rows(op, lab, tenant, book):
    Quota.objects.create(tenant=tenant, resource="gpu", limit=2)
    book("acme", gpus=2)
    html = op.post("/book/", {**BASE, "count": "1"}).text
    errors = re.search(r'<div class="errors" role="alert">(.*?)</div>', html, re.S).group(1)
    assert "quota exceeded for acme: gpu 2 used + 1 requested &gt; limit 2" in errors
    assert Reservation.objects.count() == 1


def test_more_than_the_quota_limit_is_refused_next_to_the_count(op, lab, tenant):
    Quota.objects.create(tenant=tenant, resource="gpu", limit=2)
    html = op.post("/book/", {**BASE, "count": "3"}).text
    assert (
        error_next_to(html, "count")
        == "more than the tenant&#x27;s quota allows at once: 3 gpu asked, the limit is 2"
    )
    assert no_rows()


def test_booking_answers_placed_with_the_node_and_atoms(alice, lab):
    response = alice.post("/book/", {**BASE, "count": "2"}, follow=True)
    reservation = Reservation.objects.get()
    assert reservation.status == "placed"
    html = response.text
    assert f'Reservation <a href="/reservations/{reservation.pk}/">#{reservation.pk}</a>' in html
    # The placer picks at random among the best nodes; all are empty, so any may win.
    node = Allocation.objects.get().node.name
    assert f'On <a href="/nodes/{node}/"><strong>{node}</strong></a>' in html
    atoms = re.findall(r'<span class="chip" title="(GPU-[\w-]+)">(GPU\d)</span>', html)
    assert len(atoms) == 2
    assert all(uuid.startswith(f"GPU-{node}-") and uuid.endswith(label[-1]) for uuid, label in atoms)


def test_booking_answers_pending_with_the_reason(alice, lab, book):
    for _ in range(3):
        book("acme", gpus=3)
    html = alice.post("/book/", {**BASE, "count": "2"}, **HX).text
    reservation = Reservation.objects.order_by("pk").last()
    assert reservation.status == "pending"
    assert "◷ pending" in html
    assert "no node fits (3 nodes): 3 × fits: 1 of 2 gpu free" in html
    # The best hint goes with the reason: when it would fit, or what would fit now.
    assert "Hint:</span> fits from " in html
    listing = alice.get("/reservations/").text
    assert "Unschedulable:</span> no node fits (3 nodes): 3 × fits: 1 of 2 gpu free" in listing


def test_the_tenant_is_preselected_for_a_tenant_user(alice, lab):
    html = alice.get("/book/").text
    assert '<option value="acme" selected>' in html
    assert "globex" not in html


def test_a_double_submit_books_once(alice, lab):
    data = {**BASE, "idempotency_key": "web-0123456789abcdef"}
    alice.post("/book/", data)
    alice.post("/book/", data)
    assert Reservation.objects.count() == 1


def test_each_booking_form_gets_a_fresh_key(alice, lab):
    html = alice.get("/book/").text
    first = re.search(r'name="idempotency_key" value="(web-\w+)"', html).group(1)
    answer = alice.post("/book/", {**BASE, "idempotency_key": first}, **HX).text
    second = re.search(r'name="idempotency_key" value="(web-\w+)"', answer).group(1)
    assert first != second


def test_release_asks_first_without_javascript_then_releases(alice, lab, book):
    reservation = book("acme", gpus=1)
    listing = alice.get("/reservations/").text
    link = re.search(
        rf'<a class="button small" href="(/reservations/{reservation.pk}/release/[^"]*)"', listing
    )
    assert link and f'hx-post="/reservations/{reservation.pk}/release/"' in listing
    assert "hx-confirm=" in listing
    confirm = alice.get(link.group(1).replace("&amp;", "&"))
    assert confirm.status_code == 200
    assert f"Release reservation #{reservation.pk}?" in confirm.text
    assert Reservation.objects.get(pk=reservation.pk).status == "placed"
    response = alice.post(f"/reservations/{reservation.pk}/release/", {"next": "/reservations/"})
    assert response.status_code == 302 and response["Location"] == "/reservations/"
    assert Reservation.objects.get(pk=reservation.pk).status == "released"
    assert "Release…" not in alice.get("/reservations/").text


def test_a_reservation_page_shows_status_window_node_and_atoms(alice, lab, book):
    reservation = book("acme", gpus=1)
    html = alice.get(f"/reservations/{reservation.pk}/").text
    assert "✓ placed" in html and "node-a" in html and "GPU0" in html
    assert "<dt>Window</dt>" in html


def test_with_the_pool_lease_placer_a_booking_shows_it_is_queued(op, lab, settings):
    settings.CAPACITY = {**settings.CAPACITY, "PLACER": "pool-lease"}
    html = op.post("/book/", BASE, follow=True).text
    assert '<span class="muted">Queued:</span> <code>queued for the pool&#x27;s placer</code>' in html
    listing = op.get("/reservations/").text
    assert '<span class="muted">Queued:</span> queued for the pool&#x27;s placer' in listing
    from capacity.conf import placer_config
    from capacity.placers.batch import place_queued

    place_queued(placer_config())  # the audit after the test expects nothing half-done


def test_the_booking_form_runs_admit_hooks_as_the_api_does(op, lab, settings):
    from capacity.placement import CapacityError, define_scheduler_plugin

    seen = []

    def refuse(request, context):
        seen.append(context)
        raise CapacityError("FORBIDDEN", "bookings from the browser are closed today")

    settings.CAPACITY = {
        **settings.CAPACITY,
        "SCHEDULER": {
            **settings.CAPACITY["SCHEDULER"],
            "PLUGINS": [define_scheduler_plugin("r", admit=refuse)],
        },
    }
    html = op.post("/book/", BASE).text
    assert "bookings from the browser are closed today" in html
    assert seen == [
        {"tenant": "acme", "identity": "olga", "identityKind": "user", "action": "reservations.create"}
    ]
    assert no_rows()


def test_the_preview_says_in_words_what_a_fit_reason_means(op, lab):
    """Three 4-GPU nodes; 9 GPUs asked: "fits: 4 of 9 gpu free" is 4 free of the 9 requested."""
    html = op.post("/preview/", {**BASE, "count": "9"}).text
    assert "<strong>3 ×</strong> fits: 4 of 9 gpu free" in html
    assert "— each has 4 gpu free, of the 9 requested</span>" in html


@pytest.mark.parametrize("count", ["５", "١", "4\u0663"])
def test_the_booking_form_refuses_digits_other_than_0_to_9_as_the_api_does(alice, lab, count):
    """int() reads full-width and Arabic-Indic digits; the API refuses them, and so does the form."""
    html = alice.post("/book/", {**BASE, "count": count}).text
    assert error_next_to(html, "count") == "enter a whole number in the digits 0-9"
    assert not Reservation.objects.exists()


def test_times_are_typed_and_shown_in_iso_utc_not_the_browsers_locale(alice, lab):
    """Date inputs would show mm/dd/yyyy; the form asks for YYYY-MM-DD HH:MM (UTC) as Berth writes times."""
    html = alice.get("/book/").text
    assert re.search(r'<input type="text" name="start" [^>]*placeholder="YYYY-MM-DD HH:MM"', html)
    assert 'type="datetime-local"' not in html and 'type="date"' not in html
    response = alice.post("/book/", {**BASE, "start": "2030-01-02 08:00", "duration": "2h"})
    assert response.status_code == 302
    reservation = Reservation.objects.get()
    assert reservation.starts_at.isoformat() == "2030-01-02T08:00:00+00:00"


def test_form_errors_use_the_forms_words_and_sit_next_to_their_field(alice, three_hosts_with_scalars):
    """Not the API's paths ("during must be a non-empty window", "selector[0].key")."""
    backwards = alice.post(
        "/book/", {**BASE, "start": "2030-01-02 08:00", "end": "2030-01-02 07:00", "duration": ""}
    )
    assert error_next_to(backwards.text, "end") == "the end must be after the start"
    from capacity.forms import in_form_terms

    # Selectors come to the form as shorthand; the API's expression paths read as the form's words.
    assert in_form_terms("devices[0].selector[1].key must start with a letter") == (
        "the key of the selector's 2nd expression must start with a letter"
    )
    from inventory.models import Node, NodeLabel

    for node in Node.objects.all():  # nodes that offer their scalar resources to bookings
        NodeLabel.objects.create(node=node, key="bc.dev/cap.devices.limits", value="true", source="system")
    too_many_vcpus = alice.post("/book/", {**BASE, "vcpu": "100000"}).text
    assert error_next_to(too_many_vcpus, "vcpu").startswith(
        "no node in lab-pool could take it even with nothing booked"
    )
    assert not Reservation.objects.exists()
