"""Signals inventory sends so that capacity can follow without inventory importing it.

Sent synchronously inside the transaction that made the change, so receivers (capacity's
rollups, pending-reservation wake-ups) write in that same transaction.
"""

from django.dispatch import Signal

# kwargs: pool_ids (set of pool pks whose nodes or devices changed state), woke (bool: may have
# freed capacity, such as an uncordon or a device turning healthy).
node_state_changed = Signal()
