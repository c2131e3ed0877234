"""The signed-in user's own API token: see whether it works and until when, issue a new one, revoke it."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_http_methods
from rest_framework.authtoken.models import Token

from config.web import login_required, page
from identity.tokens import issue_token, revoke_token, token_expiry, token_refusal


@require_http_methods(["GET", "POST"])
@login_required
def api_token(request: HttpRequest) -> HttpResponse:
    """Show the user's API token state; POST `issue` makes a new one (its key shown once), `revoke` ends it.

    A tenant no longer needs an operator to reach the API; an issued key is shown on this answer
    only, as `issue_token` prints it once.
    """
    key = None
    if request.method == "POST":
        action = request.POST.get("action")
        if action == "issue":
            key = issue_token(request.user).key
        elif action == "revoke":
            token = Token.objects.filter(user=request.user).first()
            if token is not None:
                revoke_token(token, by=f"{request.user.get_username()} (token page)")
    token = Token.objects.select_related("lifetime").filter(user=request.user).first()
    context = {
        "nav": "token",
        "token": token,
        "key": key,
        "expires_at": token_expiry(token) if token is not None else None,
        "refusal": token_refusal(token) if token is not None else None,
    }
    return page(request, "identity/api_token.html", context)
