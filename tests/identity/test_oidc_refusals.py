"""Refused SSO sign-ins: said in words, nothing created; in the audit with the sub where the token checked out."""

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from identity.models import ProviderIdentity, SignInEvent

from sso_provider import sign_in

pytestmark = pytest.mark.django_db


def _failed():
    return SignInEvent.objects.filter(succeeded=False).order_by("-id").first()


def test_a_sign_in_refused_after_the_token_checked_out_names_the_providers_sub(client, sso):
    sso.user("erin", email="e" * 250 + "@example.org")
    answer, _ = sign_in(client, "erin")
    assert answer.status_code == 400 and not User.objects.filter(username="erin").exists()
    refused = _failed()
    assert refused.subject and refused.issuer == sso.issuer and "longer than Berth keeps" in refused.reason
    sso.user("erin", email="erin@example.org")
    sign_in(client, "erin")
    assert ProviderIdentity.objects.get(user__username="erin").subject == refused.subject


def test_a_token_for_another_audience_names_no_sub(client, sso):
    sso.set(aud="someone-else")
    sign_in(client, "alice")
    refused = _failed()
    assert "another application" in refused.reason and (refused.subject, refused.issuer) == ("", "")


def test_a_switched_off_user_is_named_with_their_sub_in_the_export(client, sso):
    sign_in(client, "alice")
    client.logout()
    identity = ProviderIdentity.objects.get(user__username="alice")
    User.objects.filter(username="alice").update(is_active=False)
    sign_in(client, "alice")
    ops = User.objects.create_user("ops", is_staff=True)
    api = APIClient()
    api.force_authenticate(ops)
    (row,) = api.get("/api/v1/audit", {"action": "sign-in.failed"}).json()["results"]
    assert (row["actor"], row["object"], row["after"]["sub"]) == ("alice", "user:alice", identity.subject)
    assert "switched off" in row["reason"] and row["requestId"]


@pytest.mark.parametrize("answer", ["html", "empty"])
def test_a_token_endpoint_answering_html_or_nothing_signs_no_one_in_and_says_so(client, sso, answer):
    sso.set(token_answer=answer)
    page, _ = sign_in(client, "alice")
    assert page.status_code == 400 and not page.wsgi_request.user.is_authenticated
    assert "did not answer as an OpenID provider" in page.content.decode()
    assert not User.objects.exists() and not ProviderIdentity.objects.exists()
    assert _failed().reason.startswith("The sign-in service did not answer")


def test_a_name_claim_longer_than_the_field_is_refused_not_cut(client, sso):
    sso.user("alice", extra={"given_name": "G" * 151})
    page, _ = sign_in(client, "alice")
    assert page.status_code == 400 and "longer than Berth keeps" in page.content.decode()
    assert not User.objects.exists()
