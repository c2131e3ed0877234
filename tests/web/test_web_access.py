"""Who may see and do what: anonymous users sign in first, tenants see only their own, operators act."""

import pytest
from django.test import Client

from capacity.models import Reservation
from inventory.forms import ACTIONS
from inventory.models import Node, NodeLabel, NodeTaint, Pool

from web_helpers import HX

PAGES = ["/", "/pools/lab-pool/", "/nodes/node-a/", "/preview/", "/book/", "/reservations/"]


@pytest.fixture
def lab(make_node):
    return make_node("node-a", gpus=4, vcpu=64, memory=512)


@pytest.mark.parametrize("url", PAGES)
def test_anonymous_users_are_sent_to_the_login_page(lab, url):
    response = Client().get(url)
    assert response.status_code == 302
    assert response["Location"] == f"/accounts/login/?next={url}"


def test_an_anonymous_htmx_request_redirects_the_whole_window(lab):
    response = Client().get("/pools/lab-pool/", **HX)
    assert response["HX-Redirect"] == "/accounts/login/?next=/pools/lab-pool/"


def test_anonymous_node_actions_go_to_login_and_change_nothing(lab):
    response = Client().post("/nodes/node-a/actions/cordon/")
    assert response.status_code == 302
    assert not Node.objects.get(name="node-a").cordoned


def test_login_and_logout(acme_user):
    client = Client()
    page = client.get("/accounts/login/")
    assert page.status_code == 200
    assert 'name="username"' in page.text
    response = client.post("/accounts/login/", {"username": "alice", "password": "pw-alice-123"})
    assert response.status_code == 302 and response["Location"] == "/"
    home = client.get("/")
    assert "alice" in home.text
    assert 'action="/accounts/logout/"' in home.text
    # Logging out changes state, so it is a POST; a GET is refused.
    assert client.get("/accounts/logout/").status_code == 405
    assert client.post("/accounts/logout/").status_code == 302
    assert client.get("/").status_code == 302


def test_a_wrong_password_shows_an_error(acme_user):
    page = Client().post("/accounts/login/", {"username": "alice", "password": "nope"})
    assert page.status_code == 200
    assert "Please enter a correct username and password" in page.text


@pytest.mark.parametrize("action", sorted(ACTIONS))
def test_tenants_may_not_run_node_actions(alice, lab, tenant, action):
    data = {"taint-key": "gpu-burn", "label-key": "rack", "label-value": "x", "dedicate-tenant": "acme"}
    NodeLabel.objects.create(node=lab, key="team", value="a")
    response = alice.post(f"/nodes/node-a/actions/{action}/", data)
    assert response.status_code == 403
    node = Node.objects.get(name="node-a")
    assert (node.cordoned, node.maintenance) == (False, False)
    assert not NodeTaint.objects.exists()
    assert list(NodeLabel.objects.values_list("key", flat=True)) == ["team"]


@pytest.mark.parametrize("action", ["cordon", "uncordon"])
def test_tenants_may_not_run_row_actions(alice, lab, action):
    assert alice.post(f"/nodes/node-a/row/{action}/", **HX).status_code == 403
    assert not Node.objects.get(name="node-a").cordoned


def test_tenants_see_no_operator_actions(alice, lab):
    pool_page = alice.get("/pools/lab-pool/").text
    node_page = alice.get("/nodes/node-a/").text
    for html in (pool_page, node_page):
        assert "/row/cordon/" not in html
        assert "/actions/" not in html
        assert "Admin" not in html


def test_an_operator_by_group_sees_every_pool_and_the_actions(op, lab, site, other_tenant):
    private = Pool.objects.create(slug="globex-only", name="Globex only", site=site)
    private.tenants.add(other_tenant)
    home = op.get("/").text
    assert "lab-pool" in home and "globex-only" in home
    assert "/row/cordon/" in op.get("/pools/lab-pool/").text
    assert "/actions/taint/" in op.get("/nodes/node-a/").text
    # Admin needs staff status, which this operator lacks.
    assert "Admin" not in home


def test_staff_see_the_admin_link(admin_client, lab):
    assert 'href="/admin/"' in admin_client.get("/").text


def test_tenants_see_only_the_pools_they_may_book(alice, lab, site, other_tenant, make_node):
    private = Pool.objects.create(slug="globex-only", name="Globex only", site=site)
    private.tenants.add(other_tenant)
    make_node("node-g", gpus=2, pool=private)
    assert "globex-only" not in alice.get("/").text
    assert alice.get("/pools/globex-only/").status_code == 404
    assert alice.get("/nodes/node-g/").status_code == 404
    assert "globex-only" not in alice.get("/book/").text


def test_a_tenant_never_sees_another_tenants_reservation(alice, bob, lab, book):
    mine = book("acme")
    theirs = book("globex")
    listing = alice.get("/reservations/").text
    assert f'id="reservation-{mine.pk}"' in listing
    assert f'id="reservation-{theirs.pk}"' not in listing
    assert alice.get(f"/reservations/{theirs.pk}/").status_code == 404
    assert alice.get(f"/reservations/{theirs.pk}/release/").status_code == 404
    assert alice.post(f"/reservations/{theirs.pk}/release/").status_code == 404
    assert Reservation.objects.get(pk=theirs.pk).status == "placed"
    # Nor through a filter for the other tenant.
    assert f'id="reservation-{theirs.pk}"' not in alice.get("/reservations/?tenant=globex").text


def test_a_tenant_sees_other_tenants_bookings_only_as_booked(alice, lab, book, other_tenant):
    mine = book("acme")
    theirs = book("globex")
    html = alice.get("/nodes/node-a/").text
    assert f"reservation {mine.pk} (acme)" in html
    assert f"reservation {theirs.pk}" not in html
    assert "globex" not in html
    assert "booked by another tenant" in html


def test_operators_see_every_reservation_and_filter_by_tenant(op, lab, book, tenant, other_tenant):
    mine = book("acme")
    theirs = book("globex")
    listing = op.get("/reservations/").text
    assert f'id="reservation-{mine.pk}"' in listing and f'id="reservation-{theirs.pk}"' in listing
    filtered = op.get("/reservations/?tenant=globex").text
    assert f'id="reservation-{theirs.pk}"' in filtered
    assert f'id="reservation-{mine.pk}"' not in filtered


def test_a_tenant_cannot_preview_or_book_for_another_tenant(alice, lab):
    data = {"tenant": "globex", "pool": "lab-pool", "count": "1", "device_class": "gpu", "duration": "1d"}
    for url in ("/preview/", "/book/"):
        html = alice.post(url, data).text
        assert "Select a valid choice" in html
    assert not Reservation.objects.exists()


def test_every_page_links_the_favicon_and_favicon_ico_leads_to_it(client, acme_user):
    from django.templatetags.static import static

    response = client.get("/favicon.ico")
    assert (response.status_code, response["Location"]) == (301, static("favicon.svg"))
    client.force_login(acme_user)
    assert f'<link rel="icon" href="{static("favicon.svg")}"' in client.get("/").text
