"""What every API view shares: the error handler, strict JSON, clean query and path values, pagination."""

from __future__ import annotations

from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.permissions import IsAuthenticated
from rest_framework.views import APIView

from config import access
from config.api.exceptions import api_exception_handler

from .auth import AUTHENTICATION_CLASSES
from .pages import Page
from .parsers import StrictJSONParser, bad_text


class BerthAPIView(APIView):
    """A view of the Berth API: `{"code", "message"}` errors, strict JSON bodies, caller scope."""

    authentication_classes = AUTHENTICATION_CLASSES
    parser_classes = [StrictJSONParser]
    permission_classes = [IsAuthenticated]
    pagination_class = Page

    def get_exception_handler(self):
        # Also set in REST_FRAMEWORK["EXCEPTION_HANDLER"]; this keeps the API right without it.
        return api_exception_handler

    # Whether a node's own credential may call the view (for its node only): the registered
    # rules read it (config.access.view_refusal).
    for_nodes = False

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        refusal = access.view_refusal(request.user, self, kwargs)
        if refusal is not None:
            raise PermissionDenied(refusal)
        # After authentication: an anonymous caller hears 401 before anything about its input.
        for name, value in kwargs.items():
            problem = bad_text(str(value))
            if problem:
                raise ValidationError({name: problem})
        for name, values in request.query_params.lists():
            for value in values:
                problem = bad_text(value) or bad_text(name)
                if problem:
                    raise ValidationError({name: problem})

    @property
    def scope(self):
        """The caller's scope (every tenant for operators)."""
        return access.scope_for(self.request.user)

    def paginated(self, source, key, render):
        """Return the cursor page of `source` (see pages.py) positioned by `key`, rendered by `render`."""
        # An APIView, not a GenericAPIView: OPTIONS would otherwise ask for a serializer_class.
        paginator = self.pagination_class()
        page = paginator.read(self.request, source, key)
        return paginator.get_paginated_response(paginator.cut_to_bytes(render(page)))
