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


# OpenAPI 3.0.3 lets `nullable` add null only beside a `type`: drf-spectacular's nullable reference,
# {"allOf": [{"$ref": …}], "nullable": true}, rejects null in a strict validator. This is the form
# that accepts it: exactly one of the reference or null.
NULL_ONLY = {"type": "object", "nullable": True, "enum": [None]}


def nullable_references(result, generator, request, public):
    """Rewrite every nullable reference as oneOf the reference or null (drf-spectacular hook)."""

    def rewrite(node):
        if isinstance(node, dict):
            if node.get("nullable") is True and "type" not in node and "allOf" in node:
                rest = {k: v for k, v in node.items() if k not in ("allOf", "nullable")}
                refs = node["allOf"]
                node = {"oneOf": [*refs, dict(NULL_ONLY)], **rest} if len(refs) == 1 else node
            return {key: rewrite(value) for key, value in node.items()}
        if isinstance(node, list):
            return [rewrite(value) for value in node]
        return node

    return rewrite(result)
