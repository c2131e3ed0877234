"""The command base every Berth command shares: a refusal is `error: CODE: message` with its exit code.

Apart from base.py (the booking commands' request options), so that another app's command (usage_report,
simulate) loads the base alone, not the booking services.
"""

from __future__ import annotations

import getpass
import json
from collections.abc import Callable
from typing import Any, TypeVar

from django.core.management.base import CommandError

from capacity.access import COMMAND_LINE
from capacity.placement import CapacityError
from inventory.changelog import recording
from inventory.errors import InventoryError
from inventory.management.base import CodedErrorCommand

REFUSED = 2
PENDING = 3
T = TypeVar("T")


def refused(code: str, message: str) -> CommandError:
    return CommandError(f"{code}: {message}", returncode=REFUSED)


class BerthCommand(CodedErrorCommand):
    """A command that reports refusals as `error: CODE: message` and exits with its code."""

    scope = COMMAND_LINE  # whom it acts for (capacity.access)

    def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Call a service as this command; its refusal becomes the command's error."""
        try:
            with recording(actor=self.actor()):
                return fn(*args, **kwargs)
        except (CapacityError, InventoryError) as err:
            raise refused(err.code, err.message) from None

    def print_json(self, data: Any) -> None:
        self.stdout.write(json.dumps(data, indent=2, ensure_ascii=False))


def os_user() -> str:
    """Return the login running the command ("unknown" when the system cannot say)."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"
