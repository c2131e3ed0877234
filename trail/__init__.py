"""The audit trail: who acts in this request or command, its request id, and the changes nothing else records.

Every app may import it (it imports only Django); the audit export (auditlog) reads it with the
other histories. Quotas, shares, pool policies, webhooks, calendar feeds and API tokens write one
`AuditRecord` in the same transaction as their change; reservation events and node history carry
the actor and request id it holds.
"""
