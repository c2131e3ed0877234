"""Calls out of Berth: which addresses may be reached, a bounded POST, Standard Webhooks signing.

No app: webhooks deliver through it and capacity's outside check (a pool policy's policyWebhook)
calls through it, so both reach out the same guarded way.
"""
