"""Issue an API token for a user, replacing the one they had, with an expiry."""

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import CommandParser

from identity.tokens import issue_node_token, issue_token, node_key_works, replaced_key_note, token_expiry
from inventory.management.base import CodedCommand, refused


class Command(CodedCommand):
    help = (
        "Issue a new API token for USER, or with --node NODE the node's own credential (it may only "
        "report for that node and read its assignments); the old one stops working. Prints the key. "
        "It expires after --days, else after TOKEN_DAYS (BERTH_TOKEN_DAYS, 90 by default)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("user", nargs="?", help="Username.")
        parser.add_argument("--node", help="A node's name: issue that node's own credential.")
        parser.add_argument("--days", type=int, help="Days until it expires (1 to 3650).")

    def handle(self, *args: Any, **options: Any) -> None:
        days = options["days"]
        if days is not None and not 1 <= days <= 3650:
            raise refused("INVALID_INPUT", "--days must be 1 to 3650")
        if (options["user"] is None) == (options["node"] is None):
            raise refused("INVALID_INPUT", "give a USER or --node NODE")
        note = ""
        if options["node"] is not None:
            replaced = node_key_works(options["node"])
            token = self.call(issue_node_token, options["node"], days=days)
            user = token.user
            note = replaced_key_note(options["node"], replaced)
        else:
            user = get_user_model().objects.filter(username=options["user"]).first()
            if user is None:
                raise refused("NOT_FOUND", f"no user {options['user']!r}")
            token = self.call(issue_token, user, days=days)
        expires = token_expiry(token).isoformat(timespec="minutes").replace("+00:00", "Z")
        self.stdout.write(f"{token.key}  ({user.get_username()}, expires {expires})")
        if note:
            # Apart from the key line, which scripts read.
            self.stderr.write(note)
