"""The Teams pages: an operator who is not staff (as one who signs in through SSO) runs teams from the browser."""

import pytest
from django.contrib.auth.models import User

from capacity.models import Quota, Reservation
from inventory.models import Tenant
from policy.models import PoolShare
from trail.models import AuditRecord

from web_helpers import HX, error_next_to, is_full_page

NO_QUOTA_REFUSAL = (
    "no quota set for lab3: gpu has no limit and there is no default ('*'); an operator sets one on the"
    " team's page, Teams → lab3"
)


def _book(client, tenant="lab3", gpus=1):
    form = {"tenant": tenant, "pool": "lab-pool", "count": str(gpus), "device_class": "gpu", "duration": "1h"}
    return client.post("/book/", form, **HX).text


def _records(**filters):
    return [
        (r.actor, r.action, r.object, r.before, r.after)
        for r in AuditRecord.objects.filter(**filters).order_by("id")
    ]


def test_an_operator_makes_a_team_that_books_once_it_has_a_quota(two_hosts, op, operator):
    assert not operator.is_staff  # no admin: the pages are all there is
    answer = op.post("/teams/", {"slug": "lab3", "name": "Lab Three"})
    assert answer.status_code == 302 and answer["Location"] == "/teams/lab3/"
    User.objects.create_user("carol", password="pw-carol-123")
    assert op.post("/teams/lab3/members/", {"member-user": "carol"}).status_code == 302
    share = {"share-pool": "lab-pool", "share-guaranteed": "4", "share-borrowing": "", "share-lending": ""}
    assert op.post("/teams/lab3/shares/", share).status_code == 302
    page = op.get("/teams/lab3/").text
    assert 'id="no-quota-warning"' in page and "its share of lab-pool included" in page
    assert 'name="quota-limit" value="4"' in page  # offered: its guarantees
    pool_page = op.get("/pools/lab-pool/").text
    assert 'id="share-no-quota"' in pool_page and 'href="/teams/lab3/#quotas"' in pool_page
    # A member books: refused, and the words say no quota is set and where to set it.
    carol = _client_for("carol")
    assert NO_QUOTA_REFUSAL in _book(carol).replace("&#x27;", "'")
    assert not Reservation.objects.exists()
    assert op.post("/teams/lab3/quotas/", {"quota-resource": "gpu", "quota-limit": "4"}).status_code == 302
    assert 'id="no-quota-warning"' not in op.get("/teams/lab3/").text
    assert 'id="share-no-quota"' not in op.get("/pools/lab-pool/").text  # the kept section reads it fresh
    assert "✓ placed" in _book(carol)
    assert _records(actor="olga") == [
        ("olga", "team.create", "tenant:lab3", None, {"slug": "lab3", "name": "Lab Three"}),
        ("olga", "membership.add", "membership:lab3/carol", None, {"tenant": "lab3", "user": "carol"}),
        (
            "olga",
            "share.set",
            "share:lab-pool/lab3",
            None,
            {"guaranteed_gpus": 4, "borrowing_limit_gpus": None, "lending_limit_gpus": None},
        ),
        ("olga", "quota.set", "quota:lab3/gpu", None, {"limit": 4}),
    ]
    assert op.get("/audit/?object=quota:lab3/gpu").status_code == 200


def test_a_pool_page_kept_before_its_first_share_warns_of_the_team_without_quota(two_hosts, op):
    """lab-pool has no shares when its page is first drawn and kept, so nothing is read for the
    warning; a share for a team without quota changes the kept page, which then warns of it."""
    assert 'id="share-no-quota"' not in op.get("/pools/lab-pool/").text
    assert op.post("/teams/", {"slug": "lab3", "name": "Lab Three"}).status_code == 302
    share = {"share-pool": "lab-pool", "share-guaranteed": "4", "share-borrowing": "", "share-lending": ""}
    assert op.post("/teams/lab3/shares/", share).status_code == 302
    page = op.get("/pools/lab-pool/").text
    assert 'id="share-no-quota"' in page and 'href="/teams/lab3/#quotas"' in page


def _client_for(username):
    from django.test import Client

    client = Client()
    client.force_login(User.objects.get(username=username))
    return client


def test_quota_changes_and_removals_keep_before_and_after(two_hosts, op):
    op.post("/teams/acme/quotas/", {"quota-resource": "gpu", "quota-limit": "8"}, **HX)
    answer = op.post("/teams/acme/quotas/", {"quota-resource": "gpu", "quota-limit": "6"}, **HX)
    assert answer.status_code == 200 and not is_full_page(answer.text) and 'id="quota-gpu"' in answer.text
    assert answer["Vary"] and "HX-Request" in answer["Vary"]
    op.post("/teams/acme/quotas/", {"delete": "gpu"}, **HX)
    member = User.objects.create_user("dan")
    op.post("/teams/acme/members/", {"member-user": "dan"}, **HX)
    answer = op.post("/teams/acme/members/", {"remove": "dan"}, **HX)
    assert 'id="member-dan"' not in answer.text and not member.tenants.exists()
    assert [row[1:] for row in _records(object__startswith="quota:acme/gpu")] == [
        ("quota.set", "quota:acme/gpu", None, {"limit": 8}),
        ("quota.set", "quota:acme/gpu", {"limit": 8}, {"limit": 6}),
        ("quota.delete", "quota:acme/gpu", {"limit": 6}, None),
    ]
    assert [row[1] for row in _records(object="membership:acme/dan")] == [
        "membership.add",
        "membership.remove",
    ]


BAD = [
    ("/teams/", {"slug": "Not A Slug", "name": "x"}, "slug", "lower-case letters, digits and &#x27;-&#x27;"),
    ("/teams/", {"slug": "acme", "name": "Again"}, "slug", "there is already a team acme"),
    ("/teams/", {"slug": "ok", "name": ""}, "name", "This field is required."),
    (
        "/teams/acme/members/",
        {"member-user": "nobody"},
        "member-user",
        "no user nobody; people appear here once they have signed in",
    ),
    ("/teams/acme/members/", {"member-user": "node.node-a"}, "member-user", "no user node.node-a"),
    (
        "/teams/acme/quotas/",
        {"quota-resource": "g p u", "quota-limit": "1"},
        "quota-resource",
        "a device class",
    ),
    (
        "/teams/acme/quotas/",
        {"quota-resource": "gpu", "quota-limit": "-1"},
        "quota-limit",
        "greater than or equal to 0",
    ),
    (
        "/teams/acme/quotas/",
        {"quota-resource": "gpu", "quota-limit": "lots"},
        "quota-limit",
        "Enter a whole number.",
    ),
    (
        "/teams/acme/shares/",
        {"share-pool": "lab-pool", "share-guaranteed": "99"},
        "share-guaranteed",
        "the guarantees of lab-pool would add up to 99 GPUs; it has 8 bookable GPUs",
    ),
    (
        "/teams/acme/shares/",
        {"share-pool": "no-pool", "share-guaranteed": "1"},
        "share-pool",
        "Select a valid choice.",
    ),
]


@pytest.mark.parametrize("htmx", [False, True])
@pytest.mark.parametrize(("url", "data", "field", "message"), BAD)
def test_bad_input_answers_next_to_its_field_and_writes_nothing(
    two_hosts, op, htmx, url, data, field, message
):
    User.objects.create_user("node.node-a")
    counts = (
        Tenant.objects.count(),
        Quota.objects.count(),
        PoolShare.objects.count(),
        AuditRecord.objects.count(),
    )
    answer = op.post(url, data, **(HX if htmx else {}))
    assert answer.status_code == (200 if htmx else 400)  # htmx swaps nothing on a 4xx
    assert message in error_next_to(answer.text, field)
    assert is_full_page(answer.text) != htmx
    assert (
        Tenant.objects.count(),
        Quota.objects.count(),
        PoolShare.objects.count(),
        AuditRecord.objects.count(),
    ) == counts


def test_removing_what_is_not_there_says_so_and_writes_nothing(two_hosts, op):
    answer = op.post("/teams/acme/quotas/", {"delete": "vcpu"})
    assert answer.status_code == 400 and "acme has no quota for vcpu" in answer.text
    answer = op.post("/teams/acme/shares/", {"delete": "lab-pool"})
    assert answer.status_code == 400 and "acme has no share of lab-pool" in answer.text
    assert not AuditRecord.objects.exists()


@pytest.mark.parametrize(
    ("method", "url"),
    [
        ("get", "/teams/"),
        ("post", "/teams/"),
        ("get", "/teams/acme/"),
        ("post", "/teams/acme/name/"),
        ("post", "/teams/acme/members/"),
        ("post", "/teams/acme/quotas/"),
        ("post", "/teams/acme/shares/"),
        ("get", "/audit/"),
    ],
)
def test_a_tenant_gets_403_and_nothing_is_written(two_hosts, alice, method, url):
    data = {
        "slug": "x",
        "name": "X",
        "team-name": "X",
        "member-user": "alice",
        "quota-resource": "gpu",
        "quota-limit": "1",
    }
    answer = getattr(alice, method)(url, data) if method == "post" else alice.get(url)
    assert answer.status_code == 403
    assert not AuditRecord.objects.exists() and not Tenant.objects.filter(slug="x").exists()
    assert Tenant.objects.get(slug="acme").name == "Acme"


def test_an_unknown_team_is_404_and_the_nav_shows_teams_and_audit_to_operators_alone(two_hosts, op, alice):
    assert op.get("/teams/nope/").status_code == 404
    assert op.post("/teams/nope/quotas/", {"quota-resource": "gpu", "quota-limit": "1"}).status_code == 404
    nav = op.get("/teams/").text
    assert 'href="/teams/" aria-current="page">Teams</a>' in nav and 'href="/audit/">Audit</a>' in nav
    assert 'href="/teams/"' not in alice.get("/reservations/").text


def test_the_team_list_flags_a_team_without_a_gpu_quota(two_hosts, op):
    from tenants import make_tenant

    make_tenant("bare", default_quota=None)
    html = op.get("/teams/").text
    bare = html.split('id="team-bare"')[1].split("</tr>")[0]
    assert "⚠ no GPU quota" in bare
    assert "⚠ no GPU quota" not in html.split('id="team-acme"')[1].split("</tr>")[0]


def test_a_team_renamed_keeps_its_slug_and_a_blank_name_is_refused_next_to_the_field(two_hosts, op):
    assert op.post("/teams/acme/name/", {"team-name": "Acme Labs"}).status_code == 302
    assert Tenant.objects.get(slug="acme").name == "Acme Labs"
    assert "<h1>Acme Labs" in op.get("/teams/acme/").text
    answer = op.post("/teams/acme/name/", {"team-name": "  "})
    assert answer.status_code == 400 and "This field is required." in error_next_to(answer.text, "team-name")
    assert _records(action="team.set") == [
        ("olga", "team.set", "tenant:acme", {"name": "Acme"}, {"name": "Acme Labs"})
    ]
