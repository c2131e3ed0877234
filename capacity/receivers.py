"""Capacity follows inventory: rollups, bookings on broken atoms and pending reservations react to
node and device changes.

Inventory sends `node_state_changed` from its services; model signals cover the admin and other
single-row writes. Rollups are rewritten in the sender's transaction (the rollup table is locked
last, as the lock order wants); pending reservations are retried after it commits.
"""

from django.db import transaction
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from inventory.models import Device, Node, NodeCondition, NodeTaint
from inventory.signals import devices_booked, devices_reshaped, node_state_changed

from .rollups import refresh_rollups
from .services.release import RELEASE_RETRY_BATCH, retry_pending
from .services.repair import live_bookings_of, repair_pools, repair_reshaped


def follow(pool_ids, woke: bool) -> None:
    """Refresh these pools' rollups now; after the commit, repair bookings on atoms that became
    unusable and, when capacity may have freed up, retry pending work."""
    pool_ids = sorted(set(pool_ids))
    if not pool_ids:
        return
    refresh_rollups(pool_ids)
    transaction.on_commit(lambda: _repair(pool_ids))
    if woke:
        transaction.on_commit(lambda: retry_pending(pool_ids, limit=RELEASE_RETRY_BATCH))


# Reservations a request that made atoms unusable moves itself before it answers (about 14 ms each);
# the rest are the worker's, woken at once: maintenance on a node with 778 bookings took 11 s.
REQUEST_REPAIR_LIMIT = 50


def _repair(pool_ids) -> None:
    repair_pools(pool_ids, limit=REQUEST_REPAIR_LIMIT)


@receiver(node_state_changed)
def on_node_state_changed(sender, pool_ids, woke=False, **kwargs):
    follow(pool_ids, woke)


@receiver(post_save, sender=Node)
@receiver(post_delete, sender=Node)
def on_node_saved(sender, instance, created=False, **kwargs):
    if not created:  # a new node has no devices yet: nothing to count
        follow([instance.pool_id], woke=True)


@receiver(post_save, sender=Device)
@receiver(post_delete, sender=Device)
@receiver(post_save, sender=NodeTaint)
@receiver(post_delete, sender=NodeTaint)
@receiver(post_save, sender=NodeCondition)
@receiver(post_delete, sender=NodeCondition)
def on_node_part_saved(sender, instance, **kwargs):
    pool_id = Node.objects.filter(pk=instance.node_id).values_list("pool_id", flat=True).first()
    if pool_id is not None:
        follow([pool_id], woke=True)


@receiver(devices_booked)
def on_devices_booked(sender, device_ids, **kwargs):
    return live_bookings_of(device_ids)


@receiver(devices_reshaped)
def on_devices_reshaped(sender, pool_ids, device_ids, **kwargs):
    # After the commit, as for a failed GPU: the report's rows are what the repair reads.
    ids = list(device_ids)
    transaction.on_commit(lambda: repair_reshaped(ids))
