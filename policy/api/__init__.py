"""The pool rules' REST API: approving held bookings (docs/policy.md), mounted at /api/v1/ by config/api_urls.py."""
