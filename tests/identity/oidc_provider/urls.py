"""The provider's URLs: the toolkit under /o/ (its issuer), and a password form at /login/."""

import json

from django.contrib import auth
from django.http import HttpResponse, HttpResponseRedirect
from django.urls import include, path
from django.views.decorators.csrf import csrf_exempt
from oauth2_provider import views as toolkit

from oidc_provider.validator import ec_key, knobs


@csrf_exempt
def login(request):
    """Sign in at the provider: a plain form, then back to where the authorize request was."""
    if request.method == "POST":
        user = auth.authenticate(
            request, username=request.POST["username"], password=request.POST["password"]
        )
        if user is None:
            return HttpResponse("wrong password", status=401)
        auth.login(request, user)
        return HttpResponseRedirect(request.GET.get("next", "/"))
    return HttpResponse(
        '<form method="post"><input name="username" id="username"><input name="password" id="password" '
        'type="password"><button type="submit">Provider sign-in</button></form>'
    )


def discovery(request):
    """The toolkit's discovery document, saying it signs ES256 too."""
    answer = toolkit.ConnectDiscoveryInfoView.as_view()(request)
    document = json.loads(answer.content)
    document["id_token_signing_alg_values_supported"] = ["RS256", "ES256", "HS256"]
    answer.content = json.dumps(document)
    return answer


def jwks(request):
    """The toolkit's JWKS with the EC key beside its RSA key."""
    answer = toolkit.JwksInfoView.as_view()(request)
    keys = json.loads(answer.content)
    keys["keys"].append(json.loads(ec_key.export_public()) | {"alg": "ES256", "use": "sig"})
    answer.content = json.dumps(keys)
    return answer


@csrf_exempt
def token(request):
    """The toolkit's token endpoint, or an HTML page or an empty answer when the knobs say so."""
    answer = knobs().get("token_answer")
    if answer == "html":
        return HttpResponse("<html><body>Sign-in service under maintenance</body></html>")
    if answer == "empty":
        return HttpResponse(b"", content_type="application/json")
    return toolkit.TokenView.as_view()(request)


urlpatterns = [
    path("login/", login),
    path("o/token/", token),
    path("o/.well-known/openid-configuration", discovery),
    path("o/.well-known/jwks.json", jwks),
    path("o/", include("oauth2_provider.urls", namespace="oauth2_provider")),
]
