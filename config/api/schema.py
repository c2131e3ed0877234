"""How errors read in the OpenAPI schema: every error answers {"code", "message"}."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter
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


def json_errors(*codes: int) -> dict[tuple[int, str], type[ErrorSerializer]]:
    """Return these error statuses as JSON, for an operation whose answer is not (a CSV export)."""
    return {(code, "application/json"): ErrorSerializer for code in codes}


# What any operation may answer, whatever it does: 400 for a NUL byte or invalid Unicode in a path
# or query value (config.api.base), 401 without credentials, 403 to a credential the operation is
# not for (a node's own, on anything but its report and assignments).
EVERY_OPERATION = {
    "400": "Bad input: a parameter names what is wrong.",
    "401": "No credentials, or they do not work.",
    "403": "This credential may not do this.",
}


def common_errors(result, generator, request, public):
    """Declare on every operation the errors any operation may answer (drf-spectacular hook)."""
    error = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    for path in result.get("paths", {}).values():
        for operation in path.values():
            responses = operation.setdefault("responses", {})
            for code, description in EVERY_OPERATION.items():
                responses.setdefault(code, {"content": error, "description": description})
            operation["responses"] = dict(sorted(responses.items()))
    return result


# OpenAPI 3.0.3 lets `nullable` add null only beside a `type`: drf-spectacular's nullable reference,
# {"allOf": [{"$ref": …}], "nullable": true}, and a nullable oneOf reject null in a strict
# validator. This is the form that accepts it: exactly one of the reference (or shapes) or null.
NULL_ONLY = {"type": "object", "nullable": True, "enum": [None]}


def _takes_null(option: dict) -> bool:
    return option.get("nullable") is True or option.get("$ref", "").endswith("/NullEnum")


def nullable_references(result, generator, request, public):
    """Rewrite every nullable reference as oneOf the reference or null (drf-spectacular hook)."""

    def rewrite(node):
        if isinstance(node, dict):
            if node.get("nullable") is True and "type" not in node and "allOf" in node:
                rest = {k: v for k, v in node.items() if k not in ("allOf", "nullable")}
                refs = node["allOf"]
                node = {"oneOf": [*refs, dict(NULL_ONLY)], **rest} if len(refs) == 1 else node
            elif node.get("nullable") is True and "type" not in node and "oneOf" in node:
                # One of several shapes, or null: null gets a shape of its own unless one takes it.
                rest = {k: v for k, v in node.items() if k not in ("oneOf", "nullable")}
                takes_null = any(_takes_null(option) for option in node["oneOf"])
                node = {"oneOf": [*node["oneOf"], *([] if takes_null else [dict(NULL_ONLY)])], **rest}
            return {key: rewrite(value) for key, value in node.items()}
        if isinstance(node, list):
            return [rewrite(value) for value in node]
        return node

    return rewrite(result)


# DRF reads ?format= on a view with more than one renderer, and drf-spectacular declares it; an
# operation whose CSV is an operation of its own (usage.csv, audit.csv) leaves it out of the schema.
NO_FORMAT = OpenApiParameter("format", exclude=True)
