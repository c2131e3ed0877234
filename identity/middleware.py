"""Check a signed-in SSO session with the provider again every BERTH_OIDC_RECHECK minutes.

mozilla-django-oidc's SessionRefresh: once the mark the callback left in the session has passed, a
page (GET) goes through the provider with prompt=none. A provider that still knows the person signs
them straight back in through the callback, which sets their memberships from the groups claim
again; one that does not (signed out, disabled) answers login_required and the session ends.
"""

from __future__ import annotations

from django.conf import settings
from django.http import HttpResponse
from mozilla_django_oidc.middleware import SessionRefresh

from identity import discovery
from identity.backends import provider_setting


class RecheckWithProvider(SessionRefresh):
    """SessionRefresh with the endpoints from discovery, doing nothing unless SSO is configured."""

    get_settings = staticmethod(provider_setting)

    def __init__(self, get_response):
        # The library reads the endpoint at start-up; here it is read when a re-check is due.
        super(SessionRefresh, self).__init__(get_response)

    def process_request(self, request):
        if not discovery.configured() or not request.user.is_authenticated:
            return None
        self.OIDC_EXEMPT_URLS = settings.OIDC_EXEMPT_URLS
        self.OIDC_RP_CLIENT_ID = settings.OIDC_RP_CLIENT_ID
        self.OIDC_STATE_SIZE = 32
        self.OIDC_AUTHENTICATION_CALLBACK_URL = "oidc_authentication_callback"
        self.OIDC_RP_SCOPES = settings.OIDC_RP_SCOPES
        self.OIDC_USE_NONCE = True
        self.OIDC_NONCE_SIZE = 32
        if not self.is_refreshable_url(request):
            return None
        try:
            self.OIDC_OP_AUTHORIZATION_ENDPOINT = provider_setting("OIDC_OP_AUTHORIZATION_ENDPOINT")
        except discovery.ProviderDown:
            # The provider is down: the session goes on (it was checked when it began) until it is back.
            return None
        response = super().process_request(request)
        if (
            response is not None
            and response.status_code == 302
            and request.headers.get("HX-Request") == "true"
        ):
            # An htmx swap cannot follow a redirect to another site: htmx loads the whole page instead.
            swap = HttpResponse(status=204)
            swap["HX-Redirect"] = response["Location"]
            return swap
        return response
