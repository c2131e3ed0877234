"""The REST API under /api/v1/: reservations, previews, pools, nodes, node actions and ingestion.

Every endpoint calls the services (capacity.services, inventory.services, inventory.ingest); errors
answer `{"code", "message"}` through config.api.exceptions.
"""
