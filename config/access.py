"""Who may do what, as config's bases ask it: the page decorators, the API's view, permission and
token check. config imports no app, so the apps that decide (capacity.access; identity.tokens whether
a token is refused) register their answers in their AppConfig.ready; until then each question raises
rather than guess.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.core.exceptions import ImproperlyConfigured

# is_operator(user) -> bool; scope_for(user) -> the caller's scope (the API view's `scope`);
# view_refusal(user, view, kwargs) -> why this caller may not call this API view, or None;
# token_refusal(token) -> why a known, active user's token is refused (revoked, expired), or None;
# who_sql(user_id) -> SQL expressions reading what the rules ask of the user whose id is the SQL
# `user_id` (operator?, tenant slugs, tenant ids), to put into the statement that reads a session or
# a token; remember_who(user, operator, slugs, ids) -> keeps what they read on the user object.
QUESTIONS = ("is_operator", "scope_for", "view_refusal", "token_refusal", "who_sql", "remember_who")
_answers: dict[str, Callable[..., Any]] = {}


def register(**answers: Callable[..., Any]) -> None:
    """Answer config's questions (QUESTIONS) with these callables."""
    unknown = sorted(set(answers) - set(QUESTIONS))
    if unknown:
        raise ImproperlyConfigured(f"config.access asks no {', '.join(unknown)}")
    _answers.update(answers)


def _ask(question: str, *args: Any) -> Any:
    answer = _answers.get(question)
    if answer is None:
        raise ImproperlyConfigured(f"no installed app answers config.access's {question!r}")
    return answer(*args)


def is_operator(user) -> bool:
    """Return whether the user runs the fleet."""
    return _ask("is_operator", user)


def scope_for(user) -> Any:
    """Return whose objects the user may touch."""
    return _ask("scope_for", user)


def view_refusal(user, view, kwargs: dict) -> str | None:
    """Return why the user may not call this API view with these path values, or None."""
    return _ask("view_refusal", user, view, kwargs)


def token_refusal(token) -> str | None:
    """Return why this token is refused, or None."""
    return _ask("token_refusal", token)


def who_sql(user_id: str) -> tuple[str, ...]:
    """Return SQL expressions reading what the rules ask of the user whose id is the SQL `user_id`."""
    return _ask("who_sql", user_id)


def remember_who(user, *read: Any) -> None:
    """Keep on `user` what `who_sql`'s expressions read: no statement asks it again this request."""
    _ask("remember_who", user, *read)
