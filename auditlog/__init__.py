"""The audit export (GET /api/v1/audit): who changed what, when, read from what already records it.

It keeps no copy of its own: node, taint and label history (django-simple-history), reservation
events (the database trigger's rows), sign-ins (identity.SignInEvent) and the trail (trail's one
table, for changes nothing else records) are read and merged into one list, newest first. It sits
on top: nothing imports it.
"""
