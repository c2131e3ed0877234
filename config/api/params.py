"""Query parameters as the apps' API views read them: text, and true or false."""

from __future__ import annotations

from rest_framework.exceptions import ValidationError

TRUE, FALSE = frozenset({"1", "true", "yes", "on"}), frozenset({"", "0", "false", "no", "off"})


def text_param(request, name: str) -> str | None:
    """Return the parameter stripped, None when absent or blank."""
    value = request.query_params.get(name, "").strip()
    return value or None


def bool_param(request, name: str) -> bool:
    """Return the parameter as true or false; a 400 naming it for anything else."""
    value = request.query_params.get(name, "").strip().lower()
    if value in TRUE:
        return True
    if value in FALSE:
        return False
    raise ValidationError({name: "must be true or false"})
