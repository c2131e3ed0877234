"""A real OpenID provider for the SSO tests: django-oauth-toolkit with OIDC on, run as its own process.

Its knobs file (PROVIDER_KNOBS, JSON, read at every request) says each user's groups and lets a test
make the provider misbehave: another audience, an expired ID token, a signature by a key it does not
publish.
"""
