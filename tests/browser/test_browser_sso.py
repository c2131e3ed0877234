"""Sign in with SSO in a real browser, through the real OpenID provider on loopback (tests/sso_provider.py)."""

import pytest
from playwright.sync_api import expect

import sso_provider
from chromium import CHROMIUM, SKIP_REASON
from tenants import make_tenant

# The provider's fixtures, by name (tests/sso_provider.py).
provider = sso_provider.provider
sso = sso_provider.sso

pytestmark = [pytest.mark.browser, pytest.mark.skipif(not CHROMIUM.exists(), reason=SKIP_REASON)]


def test_a_person_signs_in_with_sso_and_lands_with_the_tenants_of_their_groups(
    page, sso, transactional_db, live_server
):
    from django.contrib.auth.models import User

    make_tenant("acme")
    sso.user("alice", groups=["berth-tenant-acme"])
    # The provider takes loopback redirect addresses on any port (RFC 8252), by IP, not by name.
    berth = live_server.url.replace("localhost", "127.0.0.1")
    page.goto(f"{berth}/accounts/login/")
    page.get_by_role("link", name="Sign in with SSO").click()
    page.wait_for_url(f"{sso.issuer.removesuffix('/o')}/login/**")
    page.fill("#username", "alice")
    page.fill("#password", "pw")
    page.click("button[type=submit]")
    page.wait_for_url(f"{berth}/")
    expect(page.get_by_role("button", name="Log out")).to_be_visible()
    alice = User.objects.get(username="alice")
    assert list(alice.tenants.values_list("slug", flat=True)) == ["acme"]
