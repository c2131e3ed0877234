"""Validators shared by inventory models and forms."""

import re

from django.core.exceptions import ValidationError

# Same syntax as selector keys in the placement core: starts with a letter.
# \Z, not $: `$` also matches before a trailing newline, which let `key\n` through.
LABEL_KEY_RE = re.compile(r"\A[A-Za-z][A-Za-z0-9._/-]*\Z")
LABEL_KEY_MAX = 253
LABEL_VALUE_MAX = 253
# Control characters (NUL among them, which Postgres text cannot hold) in a label or taint value.
CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")
SYSTEM_LABEL_PREFIX = "bc.dev/"


def validate_label_key(key: str) -> None:
    """Refuse a label key that the selector syntax could not name."""
    _validate_key(key, "Label")


def validate_taint_key(key: str) -> None:
    """Refuse a taint key with the label keys' syntax; the message says taint."""
    _validate_key(key, "Taint")


def _validate_key(key: str, kind: str) -> None:
    if not key or len(key) > LABEL_KEY_MAX or not LABEL_KEY_RE.match(key):
        raise ValidationError(
            f"{kind} keys start with a letter and contain only letters, digits, '.', '_', '/' and '-'.",
            code=f"invalid_{kind.lower()}_key",
        )


def label_value_problem(value: object) -> str | None:
    """Return why a label or taint value is refused, or None: at most 253 characters, no control characters."""
    if not isinstance(value, str):
        return "value must be a string"
    if len(value) > LABEL_VALUE_MAX:
        return f"value must be at most {LABEL_VALUE_MAX} characters"
    if CONTROL_RE.search(value):
        return "value must not contain control characters"
    return None
