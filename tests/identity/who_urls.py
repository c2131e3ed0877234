"""A page and an API view that do no work of their own: what a request pays before any page work.

They read what every page and API view reads of the caller (operator?, scope, tenant ids) and
answer it, so a test counts the statements of authentication alone and sees a change take effect.
"""

from django.contrib.auth.decorators import login_required
from django.http import JsonResponse
from django.urls import include, path
from rest_framework.response import Response

from capacity import access
from config.api.auth import IsOperator
from config.api.base import BerthAPIView


def _who(user) -> dict:
    scope = access.scope_for(user)
    return {
        "user": user.get_username(),
        "operator": access.is_operator(user),
        "tenants": None if scope.sees_every_tenant else sorted(scope.tenants),
        "ids": list(access.tenant_ids(user)),
    }


@login_required
def who_page(request):
    """Answer who the signed-in caller is, as a page's decorators and scope read it."""
    return JsonResponse(_who(request.user))


class WhoView(BerthAPIView):
    """Answer who the caller is, as an API view reads it (token or session)."""

    def get(self, request):
        return Response(_who(request.user))


class OperatorsOnlyView(BerthAPIView):
    """Answer only operators."""

    permission_classes = [*BerthAPIView.permission_classes, IsOperator]

    def get(self, request):
        return Response({"operator": True})


urlpatterns = [
    path("who/", who_page),
    path("api/v1/who", WhoView.as_view()),
    path("api/v1/operators-only", OperatorsOnlyView.as_view()),
    path("", include("config.urls")),
]
