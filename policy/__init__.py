"""The pool's rules (docs/architecture.md, Pool rules): limits, approvals, the outside check.

Each rule is one module that builds a capacity.rules.Rule from capacity's port; apps.py registers
them. capacity calls them through its registry and never imports this app.
"""
