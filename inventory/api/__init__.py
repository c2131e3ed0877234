"""Inventory's part of the REST API: fleet import, and how nodes, their devices, links, labels and
taints read as JSON.

The node endpoints themselves live in capacity.api (they answer with bookings and the caller's
scope); inventory never imports capacity. Both build on config.api.
"""
