"""The provider's URLs: the toolkit under /o/ (its issuer), and a password form at /login/."""

from django.contrib import auth
from django.http import HttpResponse, HttpResponseRedirect
from django.urls import include, path
from django.views.decorators.csrf import csrf_exempt


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


urlpatterns = [
    path("login/", login),
    path("o/", include("oauth2_provider.urls", namespace="oauth2_provider")),
]
