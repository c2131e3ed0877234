"""A base for commands whose refusals read `error: CODE: message` and exit with their own code.

Every change a command makes is the command's in the audit: its actor is `command:NAME`
(`command:accept_devices`), never `system`.
"""

import getpass
import json
import sys
from collections.abc import Callable
from typing import Any, TypeVar

from django.core.management.base import BaseCommand, CommandError

from config.errors import BerthError
from inventory.changelog import recording

REFUSED = 2  # the exit code of a refused command
T = TypeVar("T")


class CodedErrorCommand(BaseCommand):
    """Report a CommandError as `error: <message>` on stderr and exit with its returncode."""

    def run_from_argv(self, argv: list[str]) -> None:
        self._from_argv = True
        super().run_from_argv(argv)

    def actor(self) -> str:
        """Return who the audit names for this command's changes: "command:cordon"."""
        return f"command:{type(self).__module__.rsplit('.', 1)[-1]}"

    def execute(self, *args: Any, **options: Any) -> str | None:
        try:
            with recording(actor=self.actor()):
                return super().execute(*args, **options)
        except CommandError as exc:
            # From the shell, `error: CODE: message` rather than Django's `CommandError: ...`;
            # call_command callers get the exception with its returncode.
            if not getattr(self, "_from_argv", False) or options.get("traceback"):
                raise
            self.stderr.write(f"error: {exc}")
            sys.exit(exc.returncode)


def refused(code: str, message: str) -> CommandError:
    """Return the error a refused command ends with: `error: CODE: message`, exit REFUSED."""
    return CommandError(f"{code}: {message}", returncode=REFUSED)


def os_user() -> str:
    """Return the login running the command ("unknown" when the system cannot say)."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


class CodedCommand(CodedErrorCommand):
    """A command that reports a service's refusal (any BerthError) as `error: CODE: message`, exit 2."""

    def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Call a service as this command (its actor); its refusal becomes the command's error."""
        try:
            with recording(actor=self.actor()):
                return fn(*args, **kwargs)
        except BerthError as err:
            raise refused(err.code, err.message) from None

    def print_json(self, data: Any) -> None:
        self.stdout.write(json.dumps(data, indent=2, ensure_ascii=False))
