"""How errors read in the OpenAPI schema: every error answers {"code", "message"}."""

from __future__ import annotations

from rest_framework import serializers

from config.errors import CODES


class ErrorSerializer(serializers.Serializer):
    """Every error the API answers."""

    code = serializers.ChoiceField(
        choices=sorted(CODES), help_text="What went wrong: see the API docs' error codes."
    )
    message = serializers.CharField()


def errors(*codes: int) -> dict[int, type[ErrorSerializer]]:
    """Return OpenAPI responses for these error statuses."""
    return {code: ErrorSerializer for code in codes}
