"""A base for commands whose refusals read `error: CODE: message` and exit with their own code."""

import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError


class CodedErrorCommand(BaseCommand):
    """Report a CommandError as `error: <message>` on stderr and exit with its returncode."""

    def run_from_argv(self, argv: list[str]) -> None:
        self._from_argv = True
        super().run_from_argv(argv)

    def execute(self, *args: Any, **options: Any) -> str | None:
        try:
            return super().execute(*args, **options)
        except CommandError as exc:
            # From the shell, `error: CODE: message` rather than Django's `CommandError: ...`;
            # call_command callers get the exception with its returncode.
            if not getattr(self, "_from_argv", False) or options.get("traceback"):
                raise
            self.stderr.write(f"error: {exc}")
            sys.exit(exc.returncode)
