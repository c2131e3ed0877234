"""Counted nouns for messages: "1 device", "2 devices"."""

__all__ = ["counted"]


def counted(count: int, noun: str, nouns: str | None = None) -> str:
    """Return `count noun`, the noun plural (`nouns`, else noun + "s") unless count is 1."""
    return f"{count:,} {noun if count == 1 else nouns or noun + 's'}"
