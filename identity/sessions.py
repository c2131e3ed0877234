"""Sessions read with their user: session, user, operator group and tenants in one statement.

SESSION_ENGINE names this store. It keeps the signed-in user's id in the session row's own column
(identity.models.Session) so the statement that reads the session also reads the user and what the
rules ask of them (config.access.who_sql). Nothing is cached: signing out (the row is deleted), a
password change (the session hash), a deactivated user, a removed membership and a demoted operator
all take effect on the next request, as with Django's own store. `get_user` (the authentication middleware's) takes
the user from there instead of asking the backend again.
"""

from __future__ import annotations

import functools

from django.conf import settings
from django.contrib import auth
from django.contrib.auth import (
    BACKEND_SESSION_KEY,
    HASH_SESSION_KEY,
    SESSION_KEY,
    get_user_model,
    load_backend,
)
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.middleware import AuthenticationMiddleware
from django.contrib.auth.models import AnonymousUser
from django.contrib.sessions.backends.db import SessionStore as DatabaseStore
from django.db import connections, router
from django.utils import timezone
from django.utils.crypto import constant_time_compare
from django.utils.functional import SimpleLazyObject
from mozilla_django_oidc.auth import OIDCAuthenticationBackend

from config.access import remember_who, who_sql
from identity.models import Session


class SessionStore(DatabaseStore):
    """Django's database store over identity.models.Session, bringing the session's user along."""

    signed_in = None  # the user read with the session, once it is loaded

    @classmethod
    def get_model_class(cls):
        return Session

    def create_model_instance(self, data):
        """Return the row to save: Django's, with the signed-in user's id in its own column."""
        row = super().create_model_instance(data)
        try:
            row.user_id = int(data[SESSION_KEY])
        except (KeyError, TypeError, ValueError):
            row.user_id = None
        return row

    def load(self):
        """Return the session's data, keeping its user (with what the rules ask) in `signed_in`."""
        sql, fields = _statement()
        with connections[router.db_for_read(Session)].cursor() as cursor:
            cursor.execute(sql, [self.session_key, timezone.now()])
            row = cursor.fetchone()
        if row is None:
            self._session_key = None
            return {}
        data, user_row, who = row[0], row[1 : 1 + len(fields)], row[1 + len(fields) :]
        if user_row[0] is not None:
            user = get_user_model().from_db(cursor.db.alias, fields, user_row)
            remember_who(user, *who)
            self.signed_in = user
        return self.decode(data)


@functools.cache
def _statement() -> tuple[str, list[str]]:
    """Return the statement reading a live session, its user's columns and what the rules ask; the user's fields."""
    user = get_user_model()._meta
    fields = [f.attname for f in user.concrete_fields]
    columns = ", ".join(f"u.{f.column}" for f in user.concrete_fields)
    who = ", ".join(who_sql("u.id"))
    return (
        f"SELECT s.session_data, {columns}, {who} FROM {Session._meta.db_table} s"
        f" LEFT JOIN {user.db_table} u ON u.id = s.user_id"
        " WHERE s.session_key = %s AND s.expire_date > %s",
        fields,
    )


# The get_user(pk) methods that read "the user with this pk" (ModelBackend's: if it may sign in):
# for a backend that keeps one, the user read with the session is the one it would read.
_READS_BY_PK = (ModelBackend.get_user, OIDCAuthenticationBackend.get_user)


def get_user(request):
    """Return the session's user, as django.contrib.auth.get_user does, without reading it again."""
    session = request.session
    try:
        user_id = auth._get_user_session_key(request)
        backend_path = session[BACKEND_SESSION_KEY]
    except KeyError:
        return AnonymousUser()
    if backend_path not in settings.AUTHENTICATION_BACKENDS:
        return AnonymousUser()
    backend = load_backend(backend_path)
    signed_in = getattr(session, "signed_in", None)
    if signed_in is not None and signed_in.pk == user_id and type(backend).get_user in _READS_BY_PK:
        user = signed_in
        if isinstance(backend, ModelBackend) and not backend.user_can_authenticate(user):
            user = None
    else:
        user = backend.get_user(user_id)
    if user is None:
        return AnonymousUser()
    # Django's check of the session's hash (a changed password ends every other session).
    session_hash = session.get(HASH_SESSION_KEY)
    auth_hash = user.get_session_auth_hash()
    if session_hash and constant_time_compare(session_hash, auth_hash):
        return user
    if session_hash and any(
        constant_time_compare(session_hash, fallback) for fallback in user.get_session_auth_fallback_hash()
    ):
        session.cycle_key()
        session[HASH_SESSION_KEY] = auth_hash
        return user
    session.flush()
    return AnonymousUser()


def _cached_user(request):
    if not hasattr(request, "_cached_user"):
        request._cached_user = get_user(request)
    return request._cached_user


class Authentication(AuthenticationMiddleware):
    """Django's authentication middleware, taking the user the session store read with the session."""

    def process_request(self, request):
        super().process_request(request)
        request.user = SimpleLazyObject(lambda: _cached_user(request))
