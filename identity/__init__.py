"""Sign-in with the organisation's identity provider (OpenID Connect) and the groups it hands over;
API tokens, people's and nodes' own (identity.tokens)."""
