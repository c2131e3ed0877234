"""Sign-in URLs and the API token page: ahead of django.contrib.auth.urls (config/urls.py), so they win."""

from django.urls import path

from identity import views
from identity.token_page import api_token

urlpatterns = [
    path("accounts/login/", views.LoginView.as_view(), name="login"),
    path("accounts/logout/", views.logout, name="logout"),
    path("oidc/authenticate/", views.StartSignIn.as_view(), name="oidc_authentication_init"),
    path("oidc/callback/", views.Callback.as_view(), name="oidc_authentication_callback"),
    # The name mozilla-django-oidc's re-check leaves alone; the same sign-out as accounts/logout/.
    path("oidc/logout/", views.logout, name="oidc_logout"),
    path("accounts/token/", api_token, name="api-token"),
]
