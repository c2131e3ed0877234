"""The SSO tests' provider and settings (tests/sso_provider.py)."""

from sso_provider import provider, sso  # noqa: F401
