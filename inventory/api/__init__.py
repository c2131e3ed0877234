"""Inventory's part of the REST API: how nodes, their devices, links, labels and taints read as JSON.

The views live in capacity.api, which also knows the caller's scope and the error codes; inventory
never imports capacity.
"""
