"""The base of the booking commands and of other apps' commands that act for every tenant.

Inventory's coded command (inventory.management.base: a refusal is `error: CODE: message`, exit 2)
acting as the command line (capacity.access.COMMAND_LINE). Apart from base.py (the booking commands'
request options), so that another app's command (usage_report, quota) loads the base alone.
"""

from __future__ import annotations

from capacity.access import COMMAND_LINE
from inventory.management.base import REFUSED, CodedCommand, os_user, refused

__all__ = ["PENDING", "REFUSED", "BerthCommand", "os_user", "refused"]
PENDING = 3  # the exit code of a request left pending


class BerthCommand(CodedCommand):
    """A command that acts for every tenant and reports refusals as `error: CODE: message`."""

    scope = COMMAND_LINE  # whom it acts for (capacity.access)
