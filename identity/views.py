"""Sign-in pages: the password form with "Sign in with SSO", the OpenID Connect round trip, sign-out.

Anything that keeps a callback from signing someone in (a forged or replayed state, a token for
another audience, an expired or badly signed token, a provider answering HTML or nothing) shows the
sign-in page again with the reason in words, status 400, and creates nothing.
"""

from __future__ import annotations

import logging
from urllib.parse import urlencode

import requests
from django.conf import settings
from django.contrib import auth
from django.contrib.auth import views as auth_views
from django.core.exceptions import SuspiciousOperation
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render, resolve_url
from django.views.decorators.http import require_POST
from mozilla_django_oidc import views as oidc_views

from identity import discovery
from identity.backends import SignInRefused, provider_setting
from identity.receivers import sso_refused

log = logging.getLogger(__name__)

SSO_DOWN_SUFFIX = " Sign in with a password if you have one, or try again in a minute."


def sso_context() -> dict:
    """Return what the sign-in page says about SSO: its link, or why the provider cannot be used."""
    if not discovery.configured():
        return {"sso": False}
    try:
        discovery.document()
    except discovery.ProviderDown as err:
        return {"sso": True, "sso_down": str(err) + SSO_DOWN_SUFFIX}
    return {"sso": True, "sso_down": ""}


class LoginView(auth_views.LoginView):
    """Django's sign-in form, with the SSO link when configured and password sign-in where allowed."""

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context.update(sso_context())
        context["local_login"] = settings.BERTH_LOCAL_LOGIN
        return context


def refused(
    request: HttpRequest,
    reason: str,
    *,
    sign_out: bool = False,
    issuer: str = "",
    subject: str = "",
    username: str = "",
) -> HttpResponse:
    """Answer a sign-in that did not happen: the sign-in page, saying why.

    sign_out: the answer was for this browser (its state matched), so a session it had ends too:
    a re-check the provider or Berth refused must not leave the old session running.
    """
    log.warning("SSO sign-in refused: %s", reason)
    sso_refused(request, reason, issuer=issuer, subject=subject, username=username)
    if sign_out and request.user.is_authenticated:
        auth.logout(request)
    form = auth_views.AuthenticationForm(request)
    context = {"form": form, "sso_error": reason, "local_login": settings.BERTH_LOCAL_LOGIN, **sso_context()}
    return render(request, "registration/login.html", context, status=400)


class StartSignIn(oidc_views.OIDCAuthenticationRequestView):
    """Send the browser to the provider with state, nonce and a PKCE S256 challenge."""

    get_settings = staticmethod(provider_setting)

    def __init__(self, *args, **kwargs):
        # The library reads the endpoint when the view is made: here, when the request arrives.
        super(oidc_views.OIDCAuthenticationRequestView, self).__init__(*args, **kwargs)

    def get(self, request):
        if not discovery.configured():
            return refused(request, "Sign-in with SSO is not configured here.")
        try:
            self.OIDC_OP_AUTH_ENDPOINT = provider_setting("OIDC_OP_AUTHORIZATION_ENDPOINT")
        except discovery.ProviderDown as err:
            return refused(request, str(err) + SSO_DOWN_SUFFIX)
        self.OIDC_RP_CLIENT_ID = settings.OIDC_RP_CLIENT_ID
        return super().get(request)


class Callback(oidc_views.OIDCAuthenticationCallbackView):
    """Take the provider's code back: check state, trade the code, check the ID token, sign in."""

    get_settings = staticmethod(provider_setting)

    def get(self, request):
        if request.GET.get("error"):
            # prompt=none of the re-check comes back with login_required when the provider's session ended.
            # Only an answer to this browser's own request may end its session (no sign-out by link).
            if request.GET.get("state") in request.session.get("oidc_states", {}):
                super().get(request)  # drops the state and ends a session being re-checked
            words = request.GET.get("error_description") or request.GET["error"]
            return refused(request, f"The sign-in service did not sign you in: {words}.")
        if not request.GET.get("code") or not request.GET.get("state"):
            return refused(request, "The sign-in service's answer lacks its code or state.")
        if request.GET["state"] not in request.session.get("oidc_states", {}):
            # Forged, replayed, or from another browser: never trade its code.
            return refused(
                request, "This sign-in link was already used or was not started here: start again."
            )
        try:
            response = super().get(request)
        except SignInRefused as err:
            return refused(request, str(err), sign_out=True, issuer=err.issuer, subject=err.subject)
        except discovery.ProviderDown as err:
            return refused(request, str(err) + SSO_DOWN_SUFFIX, sign_out=True)
        except SuspiciousOperation as err:
            return refused(request, f"The sign-in service's answer did not check out ({err}).", sign_out=True)
        except requests.HTTPError as err:
            status = err.response.status_code if err.response is not None else "?"
            return refused(
                request, f"The sign-in service refused the sign-in code (HTTP {status}).", sign_out=True
            )
        except (requests.RequestException, ValueError):
            return refused(
                request, "The sign-in service did not answer as an OpenID provider.", sign_out=True
            )
        user = getattr(self, "user", None)
        if user is None:
            return refused(request, "The sign-in service did not vouch for anyone.", sign_out=True)
        if not user.is_active:
            identity = getattr(user, "provider_identity", None)
            return refused(
                request,
                "Your Berth account is switched off: ask an operator.",
                sign_out=True,
                issuer=identity.issuer if identity else "",
                subject=identity.subject if identity else "",
                username=user.get_username(),
            )
        return response


@require_POST
def logout(request: HttpRequest) -> HttpResponse:
    """Sign out of Berth, and of the provider too where it offers end_session_endpoint."""
    id_token = request.session.get("oidc_id_token")
    auth.logout(request)
    after = request.build_absolute_uri(resolve_url(settings.LOGOUT_REDIRECT_URL))
    if id_token and discovery.configured():
        try:
            end_session = discovery.document().get("end_session_endpoint")
        except discovery.ProviderDown:
            end_session = None
        if end_session:
            query = urlencode(
                {
                    "id_token_hint": id_token,
                    "post_logout_redirect_uri": after,
                    "client_id": settings.OIDC_RP_CLIENT_ID,
                }
            )
            return HttpResponseRedirect(f"{end_session}?{query}")
    return HttpResponseRedirect(after)
