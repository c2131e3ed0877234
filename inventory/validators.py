"""Validators shared by inventory models and forms."""

import re

from django.core.exceptions import ValidationError

# Same syntax as selector keys in the placement core: starts with a letter.
LABEL_KEY_RE = re.compile(r"^[A-Za-z][A-Za-z0-9._/-]*$")
LABEL_KEY_MAX = 253
SYSTEM_LABEL_PREFIX = "bc.dev/"


def validate_label_key(key: str) -> None:
    """Refuse a key that the selector syntax could not name."""
    if not key or len(key) > LABEL_KEY_MAX or not LABEL_KEY_RE.match(key):
        raise ValidationError(
            "Label keys start with a letter and contain only letters, digits, '.', '_', '/' and '-'.",
            code="invalid_label_key",
        )
