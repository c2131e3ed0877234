"""Sign-in through a real OpenID provider (django-oauth-toolkit on loopback): the code flow end to end."""

from urllib.parse import parse_qs, urlsplit

import pytest
from django.contrib.auth.models import User

from identity.models import ProviderIdentity

from sso_provider import local, sign_in, through_provider
from tenants import make_tenant

pytestmark = pytest.mark.django_db


def test_the_sign_in_page_offers_sso_when_configured(client, sso):
    page = client.get("/accounts/login/")
    assert b"Sign in with SSO" in page.content
    assert b'href="/oidc/authenticate/' in page.content


def test_the_sign_in_page_has_no_sso_link_without_an_issuer(client, settings):
    settings.BERTH_OIDC_ISSUER = ""
    assert b"Sign in with SSO" not in client.get("/accounts/login/").content


def test_the_authorize_request_carries_state_nonce_and_a_pkce_s256_challenge(client, sso):
    query = parse_qs(urlsplit(client.get("/oidc/authenticate/")["Location"]).query)
    assert query["code_challenge_method"] == ["S256"]
    assert len(query["code_challenge"][0]) == 43
    assert query["state"][0] and query["nonce"][0]
    assert query["response_type"] == ["code"]


def test_first_sign_in_creates_the_user_by_sub_with_the_tenants_of_their_groups(client, sso):
    acme = make_tenant("acme")
    make_tenant("globex")
    sso.user("alice", groups=["berth-tenant-acme", "unrelated"], email="alice@example.org")
    answer, _ = sign_in(client, "alice")
    assert answer.status_code == 302 and answer["Location"] == "/"
    identity = ProviderIdentity.objects.get()
    assert identity.issuer == sso.issuer and identity.user.username == "alice"
    assert list(identity.user.tenants.all()) == [acme]
    assert not identity.user.groups.filter(name="operators").exists()
    assert not identity.user.has_usable_password()
    assert client.get("/").wsgi_request.user == identity.user


def test_a_group_added_then_taken_away_in_the_provider_follows_at_the_next_sign_in(client, sso):
    make_tenant("acme")
    globex = make_tenant("globex")
    sso.user("bob", groups=["berth-tenant-acme"])
    sign_in(client, "bob")
    sso.user("bob", groups=["berth-tenant-acme", "berth-tenant-globex", "berth-operators"])
    sign_in(client, "bob")
    bob = User.objects.get(username="bob")
    assert sorted(bob.tenants.values_list("slug", flat=True)) == ["acme", "globex"]
    assert bob.groups.filter(name="operators").exists()
    sso.user("bob", groups=["berth-tenant-globex"])
    sign_in(client, "bob")
    assert list(bob.tenants.all()) == [globex]
    assert not bob.groups.filter(name="operators").exists()
    assert User.objects.filter(username__startswith="bob").count() == 1


def test_a_group_naming_no_tenant_is_ignored_and_logged_never_created(client, sso, caplog):
    sso.user("carol", groups=["berth-tenant-nosuch"])
    answer, _ = sign_in(client, "carol")
    assert answer.status_code == 302
    from inventory.models import Tenant

    assert not Tenant.objects.filter(slug="nosuch").exists()
    assert "berth-tenant-nosuch names no tenant" in caplog.text


def test_an_existing_user_with_the_same_email_is_not_taken_over(client, sso):
    someone = User.objects.create_user("dave", email="dave@example.org")
    sso.user("dave", email="dave@example.org")
    sign_in(client, "dave")
    identity = ProviderIdentity.objects.get()
    assert identity.user != someone
    assert identity.user.username.startswith("dave-")


def refused_words(answer) -> str:
    assert answer.status_code == 400
    assert not answer.wsgi_request.user.is_authenticated
    assert not ProviderIdentity.objects.exists() and not User.objects.exists()
    return answer.content.decode()


def test_a_token_for_another_audience_is_refused_in_words(client, sso):
    sso.set(aud="someone-else")
    answer, _ = sign_in(client, "alice")
    assert "issued for another application" in refused_words(answer)


def test_an_expired_id_token_is_refused(client, sso):
    sso.set(expired=True)
    answer, _ = sign_in(client, "alice")
    assert "has expired" in refused_words(answer)


def test_an_id_token_signed_by_a_key_the_provider_does_not_publish_is_refused(client, sso):
    sso.set(bad_signature=True)
    answer, _ = sign_in(client, "alice")
    assert "signature does not match" in refused_words(answer)


def test_an_id_token_naming_a_key_the_provider_does_not_publish_is_refused_after_a_fresh_look(client, sso):
    sso.set(unknown_kid=True)
    answer, _ = sign_in(client, "alice")
    assert "names a signing key the provider does not publish" in refused_words(answer)


def test_a_replayed_state_is_refused_and_signs_no_one_in(client, sso):
    answer, callback = sign_in(client, "alice")
    assert answer.status_code == 302
    client.logout()
    User.objects.all().delete()
    assert "already used" in refused_words(client.get(local(callback)))


def test_a_forged_state_is_refused(client, sso):
    client.get("/oidc/authenticate/")
    answer = client.get("/oidc/callback/?code=made-up&state=forged")
    assert "already used or was not started here" in refused_words(answer)


def test_a_claim_longer_than_the_field_is_refused_not_cut(client, sso):
    sso.user("erin", email="e" * 250 + "@example.org")
    answer, _ = sign_in(client, "erin")
    assert "longer than Berth keeps" in refused_words(answer)


def test_a_provider_that_is_down_is_named_on_the_sign_in_page_and_passwords_still_work(client, sso, settings):
    settings.BERTH_OIDC_ISSUER = "http://127.0.0.1:9/o"
    page = client.get("/accounts/login/").content.decode()
    assert "is not answering" in page and "Sign in with SSO" not in page
    assert "not answering" in refused_words(client.get("/oidc/authenticate/"))
    User.objects.create_user("local", password="secret-pw-1")
    assert (
        client.post("/accounts/login/", {"username": "local", "password": "secret-pw-1"}).status_code == 302
    )


def test_local_login_off_lets_only_superusers_in(client, sso, settings):
    settings.BERTH_LOCAL_LOGIN = False
    User.objects.create_user("local", password="secret-pw-1")
    User.objects.create_superuser("root", password="secret-pw-2")
    assert (
        client.post("/accounts/login/", {"username": "local", "password": "secret-pw-1"}).status_code == 200
    )
    assert client.post("/accounts/login/", {"username": "root", "password": "secret-pw-2"}).status_code == 302


def test_sign_out_ends_the_provider_session_through_its_end_session_endpoint(client, sso):
    sign_in(client, "alice")
    answer = client.post("/accounts/logout/")
    assert answer.status_code == 302
    target = urlsplit(answer["Location"])
    assert f"{target.scheme}://{target.netloc}{target.path}".startswith(sso.issuer)
    assert "id_token_hint" in parse_qs(target.query)
    assert not client.get("/").wsgi_request.user.is_authenticated


def test_a_session_is_checked_again_after_the_recheck_time_and_follows_the_groups(client, sso):
    import requests

    acme = make_tenant("acme")
    sso.user("alice", groups=["berth-tenant-acme", "berth-operators"])
    browser = requests.Session()  # the provider's cookie, as a browser keeps it
    sign_in(client, "alice", session=browser)
    session = client.session
    session["oidc_id_token_expiration"] = 0
    session.save()
    sso.user("alice", groups=[])
    bounce = client.get("/reservations/")
    assert bounce.status_code == 302 and bounce["Location"].startswith(sso.issuer)
    assert parse_qs(urlsplit(bounce["Location"]).query)["prompt"] == ["none"]
    back = client.get(local(through_provider(bounce["Location"], "alice", session=browser)))
    assert back.status_code == 302 and back["Location"] == "/reservations/"
    alice = User.objects.get(username="alice")
    assert acme not in alice.tenants.all() and not alice.groups.filter(name="operators").exists()


def test_an_id_token_signed_es256_with_a_published_key_signs_in(client, sso):
    sso.set(alg="ES256")
    answer, _ = sign_in(client, "alice")
    assert answer.status_code == 302 and ProviderIdentity.objects.filter(user__username="alice").exists()


@pytest.mark.parametrize("algorithm", ["HS256", "none"])
def test_an_id_token_signed_with_the_client_secret_or_unsigned_is_refused(client, sso, algorithm):
    sso.set(alg=algorithm)
    answer, _ = sign_in(client, "alice")
    assert "Berth takes RS256 or ES256 only" in refused_words(answer)


def test_a_provider_answering_html_for_its_configuration_is_named_on_the_sign_in_page(client, sso, settings):
    settings.BERTH_OIDC_ISSUER = sso.issuer.removesuffix("/o") + "/login"
    page = client.get("/accounts/login/").content.decode()
    assert "is not answering. It answered HTTP 404" in page


def test_a_switched_off_user_is_not_signed_in(client, sso):
    sign_in(client, "alice")
    client.logout()
    User.objects.filter(username="alice").update(is_active=False)
    answer, _ = sign_in(client, "alice")
    assert answer.status_code == 400 and b"switched off" in answer.content
    assert not answer.wsgi_request.user.is_authenticated


def test_a_session_whose_provider_session_ended_ends_at_the_recheck(client, sso):
    sign_in(client, "alice")
    session = client.session
    session["oidc_id_token_expiration"] = 0
    session.save()
    bounce = client.get("/reservations/")
    assert parse_qs(urlsplit(bounce["Location"]).query)["prompt"] == ["none"]
    # A browser without the provider's session: it answers login_required, and Berth signs out.
    back = client.get(local(through_provider(bounce["Location"], "alice", session=None, sign_in=False)))
    assert back.status_code == 400 and b"login_required" in back.content
    assert not client.get("/").wsgi_request.user.is_authenticated


def test_an_htmx_swap_due_for_the_recheck_is_told_to_load_the_whole_page_through_the_provider(client, sso):
    sign_in(client, "alice")
    session = client.session
    session["oidc_id_token_expiration"] = 0
    session.save()
    answer = client.get("/reservations/", headers={"HX-Request": "true"})
    assert answer.status_code == 204 and answer["HX-Redirect"].startswith(sso.issuer)


def test_sign_ins_and_failed_ones_are_recorded_with_the_providers_sub(client, sso):
    from identity.models import SignInEvent

    sign_in(client, "alice")
    client.logout()
    sso.set(aud="someone-else")
    sign_in(client, "alice")
    client.post("/accounts/login/", {"username": "mallory", "password": "guess"})
    ok, refused, wrong = SignInEvent.objects.order_by("id")
    assert (ok.method, ok.succeeded, ok.username) == ("sso", True, "alice")
    assert ok.subject == ProviderIdentity.objects.get().subject and ok.issuer == sso.issuer
    assert (refused.method, refused.succeeded) == ("sso", False) and "another application" in refused.reason
    assert (wrong.method, wrong.succeeded, wrong.username) == ("password", False, "mallory")
    assert ok.address == "127.0.0.1"


def test_an_error_answer_with_a_state_this_browser_never_sent_does_not_sign_it_out(client, sso):
    sign_in(client, "alice")
    answer = client.get("/oidc/callback/?error=login_required&state=made-up")
    assert answer.status_code == 400
    assert client.get("/").wsgi_request.user.username == "alice"


def test_the_audit_says_what_each_sign_in_changed_in_tenants_and_role(client, sso):
    from trail.models import AuditRecord

    make_tenant("acme")
    make_tenant("globex")
    sso.user("carol", groups=["berth-tenant-acme"])
    sign_in(client, "carol")
    sign_in(client, "carol")  # nothing changed: no row
    sso.user("carol", groups=["berth-tenant-globex", "berth-operators"])
    sign_in(client, "carol")
    rows = list(
        AuditRecord.objects.filter(object="user:carol")
        .order_by("id")
        .values("action", "actor", "before", "after")
    )
    assert rows == [
        {
            "action": "user.groups-set",
            "actor": "identity-provider",
            "before": {"tenants": [], "operator": False},
            "after": {"tenants": ["acme"], "operator": False},
        },
        {
            "action": "user.groups-set",
            "actor": "identity-provider",
            "before": {"tenants": ["acme"], "operator": False},
            "after": {"tenants": ["globex"], "operator": True},
        },
    ]
