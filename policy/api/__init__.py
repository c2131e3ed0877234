"""The pool rules' REST API: approvals, a pool's policy and its shares (docs/policy.md, docs/shares.md).

Mounted at /api/v1/ by config/api_urls.py.
"""
