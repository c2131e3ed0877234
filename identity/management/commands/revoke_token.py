"""Revoke API tokens: a user's, or one by its key. A revoked token answers 401 from then on."""

from typing import Any

from django.core.management.base import CommandParser
from rest_framework.authtoken.models import Token

from identity.tokens import revoke_token
from inventory.management.base import CodedCommand, os_user, refused


class Command(CodedCommand):
    help = "Revoke the API token of each USER (or of --key KEY). Revoking twice is fine."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("users", nargs="*", metavar="USER", help="Usernames.")
        parser.add_argument("--key", action="append", default=[], help="A token's key (repeatable).")

    def handle(self, *args: Any, **options: Any) -> None:
        if not options["users"] and not options["key"]:
            raise refused("INVALID_INPUT", "name a USER or a --key")
        found = []
        for username in options["users"]:
            token = Token.objects.select_related("user").filter(user__username=username).first()
            if token is None:
                raise refused("NOT_FOUND", f"{username!r} has no API token")
            found.append(token)
        for key in options["key"]:
            token = Token.objects.select_related("user").filter(key=key).first()
            if token is None:
                raise refused("NOT_FOUND", f"no token {key[:6]}…")
            found.append(token)
        by = f"{os_user()} (manage.py revoke_token)"
        for token in found:
            when = self.call(revoke_token, token, by=by)
            stamp = when.isoformat(timespec="minutes").replace("+00:00", "Z")
            self.stdout.write(f"revoked {token.user.get_username()}'s token {token.key[:6]}… at {stamp}")
