"""Signals inventory sends so that capacity and usage can follow without inventory importing them.

Sent synchronously inside the transaction that made the change, so receivers (capacity's
rollups, pending-reservation wake-ups) write in that same transaction.
"""

from django.dispatch import Signal

# kwargs: pool_ids (set of pool pks whose nodes or devices changed state), woke (bool: may have
# freed capacity, such as an uncordon or a device turning healthy).
node_state_changed = Signal()

# A question, not news: kwargs device_ids (device pks). Each receiver returns {device pk: [names of
# the live or future bookings holding it, such as "reservation 12"]}; a node report may not change
# the shape of a booked device (inventory.trust).
devices_booked = Signal()

# kwargs pool_ids, device_ids: an operator changed the class, MIG parent or index of these booked
# devices; their bookings are to be placed again, as for a failed GPU. Sent inside the transaction.
devices_reshaped = Signal()

# kwargs node (name), code (the refusal's stable code): a node report was refused (counted).
report_refused = Signal()

# kwargs device_ids (device pks): a node report withdrew these unverified devices; receivers drop
# what they keep of them (usage: their hourly rows), in the report's transaction.
devices_withdrawn = Signal()
