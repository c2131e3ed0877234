"""Uncordon a node: the placer may use it again (pending reservations are retried)."""

from inventory import services as inventory

from .cordon import Command as CordonCommand


class Command(CordonCommand):
    help = "Uncordon NODE: the placer may use it again. Refusals (such as an unknown node) exit 2."
    action = staticmethod(inventory.uncordon)
    done = "uncordoned"
