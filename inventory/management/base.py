"""A base for commands whose refusals read `error: CODE: message` and exit with their own code.

Every change a command makes is the command's in the audit: its actor is `command:NAME`
(`command:accept_devices`), never `system`.
"""

import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from inventory.changelog import recording


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
