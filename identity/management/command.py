"""The token commands' base: a refusal is `error: CODE: message` and exits 2, as every Berth command's.

capacity's command base (capacity/management/command.py) says the same for the booking commands;
identity never imports capacity, so its two commands stand on inventory's coded-error base.
"""

from __future__ import annotations

import getpass
from collections.abc import Callable
from typing import Any, TypeVar

from django.core.management.base import CommandError

from config.errors import BerthError
from inventory.management.base import CodedErrorCommand

REFUSED = 2
T = TypeVar("T")


def refused(code: str, message: str) -> CommandError:
    return CommandError(f"{code}: {message}", returncode=REFUSED)


class TokenCommand(CodedErrorCommand):
    """A command that reports a service's refusal as `error: CODE: message` and exits with 2."""

    def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Call a service; its refusal becomes the command's error (execute already names the actor)."""
        try:
            return fn(*args, **kwargs)
        except BerthError as err:
            raise refused(err.code, err.message) from None


def os_user() -> str:
    """Return the login running the command ("unknown" when the system cannot say)."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"
