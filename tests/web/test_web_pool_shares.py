"""The pool page's Shares section: operators see and edit every row in place, tenants their own."""

from policy.models import PoolShare
from policy.shares import set_share

HX = {"HTTP_HX_REQUEST": "true"}


def post_share(client, tenant, guaranteed, borrowing="", lending="", **extra):
    data = {
        "share-tenant": tenant,
        "share-guaranteed": guaranteed,
        "share-borrowing": borrowing,
        "share-lending": lending,
    }
    return client.post("/pools/lab-pool/shares/", data, **extra)


def test_a_pool_without_shares_says_every_tenant_books_as_before(op, alice, two_hosts):
    for client in (op, alice):
        text = client.get("/pools/lab-pool/").content.decode()
        assert 'id="shares"' in text and "No shares: every tenant books this pool as before" in text
    assert "Set share" in op.get("/pools/lab-pool/").content.decode()
    assert "Set share" not in alice.get("/pools/lab-pool/").content.decode()


def test_an_operator_sets_a_share_in_place_and_gets_the_section_back(op, two_hosts):
    response = post_share(op, "acme", "3", "", "2", **HX)
    assert response.status_code == 200
    assert "HX-Request" in response["Vary"]
    text = response.content.decode()
    assert text.lstrip().startswith('<section id="shares"') and "<html" not in text
    assert 'id="share-acme"' in text and "no limit" in text
    share = PoolShare.objects.get()
    assert (
        share.tenant.slug,
        share.guaranteed_gpus,
        share.borrowing_limit_gpus,
        share.lending_limit_gpus,
    ) == (
        "acme",
        3,
        None,
        2,
    )
    response = op.post("/pools/lab-pool/shares/", {"share-tenant": "acme", "delete": "1"}, **HX)
    assert response.status_code == 200 and not PoolShare.objects.exists()


def test_a_guarantee_above_the_pool_is_shown_next_to_the_form_and_nothing_is_written(op, two_hosts):
    # htmx swaps only a 2xx answer: the section comes back with the error in it.
    response = post_share(op, "acme", "9", **HX)
    assert response.status_code == 200
    assert "would add up to 9 GPUs; it has 8 bookable GPUs" in response.content.decode()
    response = post_share(op, "acme", "-1", **HX)
    assert response.status_code == 200 and "has-error" in response.content.decode()
    response = post_share(op, "acme", "9")
    assert response.status_code == 400 and "would add up to 9 GPUs" in response.content.decode()
    assert not PoolShare.objects.exists()


def test_without_htmx_a_set_share_goes_back_to_the_pool_page(op, two_hosts):
    response = post_share(op, "globex", "2")
    assert (response.status_code, response["Location"]) == (302, "/pools/lab-pool/#shares")


def test_a_tenant_sees_its_own_row_never_another_tenants_and_may_not_write(alice, two_hosts):
    set_share("lab-pool", "acme", 2, None, None)
    set_share("lab-pool", "globex", 5, 0, 0)
    text = alice.get("/pools/lab-pool/").content.decode()
    assert 'id="share-acme"' in text
    assert "globex" not in text
    assert post_share(alice, "acme", "8", **HX).status_code == 403
    assert PoolShare.objects.get(tenant__slug="acme").guaranteed_gpus == 2


def test_a_tenant_without_a_row_in_a_pool_with_shares_reads_a_guarantee_of_0(bob, two_hosts):
    set_share("lab-pool", "acme", 2, None, None)
    text = bob.get("/pools/lab-pool/").content.decode()
    assert (
        "its guarantee here is 0" in text
        and "acme" not in text.split('id="shares"')[1].split("</section>")[0]
    )


def test_the_admin_refuses_guarantees_past_the_pool_and_saves_the_rest(two_hosts, tenant, pool):
    from django.contrib.auth import get_user_model
    from django.test import Client

    admin = get_user_model().objects.create_superuser("root", password="x")
    client = Client()
    client.force_login(admin)
    form = {
        "pool": pool.pk,
        "tenant": tenant.pk,
        "guaranteed_gpus": 9,
        "borrowing_limit_gpus": "",
        "lending_limit_gpus": "",
    }
    response = client.post("/admin/policy/poolshare/add/", form)
    assert response.status_code == 200
    assert "would add up to 9 GPUs; it has 8 bookable GPUs" in response.content.decode()
    assert not PoolShare.objects.exists()
    response = client.post("/admin/policy/poolshare/add/", form | {"guaranteed_gpus": 8})
    assert response.status_code == 302
    assert PoolShare.objects.get().guaranteed_gpus == 8
