"""The Audit page (docs/audit.md, The page): the export's rows for operators in the browser.

The same sources and filters as GET /api/v1/audit (auditlog.sources), newest first, paged by a
signed position (no OFFSET: a deep page costs what the first does), with links to the same rows as
JSON and CSV. A filter that cannot be read shows its error next to its field and lists nothing.
"""

from __future__ import annotations

import datetime as dt
import json

from django import forms
from django.core import signing
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_GET

from auditlog.sources import Filters, audit_source
from config.web import operator_required, page, wants_partial

PER_PAGE = 50
SALT = "berth.audit-page"
# What the action filter offers (any other exact action may be typed).
ACTIONS = (
    "sign-in",
    "sign-in.failed",
    "user.create",
    "user.set",
    "user.delete",
    "user.groups-set",
    "team.create",
    "team.set",
    "team.delete",
    "membership.add",
    "membership.remove",
    "quota.set",
    "quota.delete",
    "share.set",
    "share.delete",
    "policy.set",
    "reservation.placed",
    "reservation.released",
    "reservation.preempted",
    "node.cordon",
    "node.drain",
    "node.accept",
    "token.issue",
    "token.revoke",
    "webhook.create",
)


class Moment(forms.CharField):
    """A time: ISO 8601 with a zone, or as the browser's date-time field sends it (read as UTC)."""

    def clean(self, value):
        value = super().clean(value)
        if not value:
            return None
        try:
            moment = dt.datetime.fromisoformat(value.replace("Z", "+00:00") if value.endswith("Z") else value)
        except ValueError:
            raise forms.ValidationError(
                "a time such as 2026-05-01 09:00 (UTC) or 2026-05-01T09:00:00Z"
            ) from None
        moment = moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC)
        try:
            moment = moment.astimezone(dt.UTC)
        except OverflowError:
            moment = None
        if moment is None or not 1970 <= moment.year <= 9998:
            raise forms.ValidationError("a time between 1970 and 9998")
        return moment


class AuditFilterForm(forms.Form):
    """The audit's filters, named as the API's: each exact, `from` and `to` in UTC."""

    actor = forms.CharField(required=False, max_length=150, help_text="a username, command:NAME or system")
    action = forms.CharField(required=False, max_length=40, help_text="e.g. quota.set, node.cordon")
    object = forms.CharField(required=False, max_length=300, help_text="e.g. quota:acme/gpu, node:gpu-01")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # `from` is a keyword: these two are added by name.
        self.fields["from"] = Moment(
            label="From (UTC)", required=False, max_length=40, help_text="at or after"
        )
        self.fields["to"] = Moment(label="To (UTC)", required=False, max_length=40, help_text="before")
        self.fields["action"].widget.attrs["list"] = "audit-actions"
        for name in ("from", "to"):
            self.fields[name].widget.attrs["placeholder"] = "2026-05-01 09:00"

    def clean(self):
        data = super().clean()
        if data.get("from") and data.get("to") and data["to"] <= data["from"]:
            self.add_error("to", "after From")
        return data


def _values(entry: dict) -> str:
    """Return before → after as one short text (JSON, keys sorted)."""

    def text(value) -> str:
        return "—" if value is None else json.dumps(value, sort_keys=True, default=str, ensure_ascii=False)

    if entry["before"] is None and entry["after"] is None:
        return ""
    return f"{text(entry['before'])} → {text(entry['after'])}"


def _query(form: AuditFilterForm) -> dict:
    """Return the filters as the API takes them (times as ISO 8601 in UTC), the empty ones left out."""
    data = form.cleaned_data
    query = {k: data[k] for k in ("actor", "action", "object") if data.get(k)}
    for name in ("from", "to"):
        if data.get(name):
            query[name] = data[name].isoformat().replace("+00:00", "Z")
    return query


def _cursor(raw: str | None) -> tuple[tuple | None, bool] | None:
    if not raw:
        return None, False
    try:
        token = signing.loads(raw, salt=SALT)
        position, backwards = tuple(token["p"]), token["b"]
        if len(position) != 3 or not isinstance(backwards, bool):
            raise ValueError
        dt.datetime.fromisoformat(position[0])
    except (signing.BadSignature, KeyError, TypeError, ValueError, UnicodeError):
        return None  # not a position this page gave out
    return position, backwards


def _link(query: dict, position, backwards: bool) -> str:
    token = signing.dumps({"p": list(position), "b": backwards}, salt=SALT, compress=True)
    return f"{reverse('audit')}?{urlencode({**query, 'cursor': token})}"


@require_GET
@operator_required  # the audit is the operators', on its page as in the export
def audit(request: HttpRequest) -> HttpResponse:
    """List who changed what, newest first: filters, Newer and Older, and the same rows as JSON and CSV."""
    form = AuditFilterForm(request.GET)
    entries, newer, older, query, bad_cursor = [], None, None, {}, False
    if form.is_valid():
        query = _query(form)
        cursor = _cursor(request.GET.get("cursor"))
        bad_cursor = cursor is None
        position, backwards = cursor or (None, False)
        filters = Filters(
            actor=query.get("actor"),
            action=query.get("action"),
            object=query.get("object"),
            since=form.cleaned_data["from"],
            until=form.cleaned_data["to"],
        )
        rows = audit_source(filters)(position, backwards, PER_PAGE + 1)
        more = len(rows) > PER_PAGE
        rows = rows[:PER_PAGE]
        if backwards:
            rows.reverse()
        has_newer = more if backwards else position is not None
        has_older = True if backwards else more
        if rows:
            newer = _link(query, rows[0]["_key"], True) if has_newer else None
            older = _link(query, rows[-1]["_key"], False) if has_older else None
        entries = [{**row, "values": _values(row)} for row in rows]
    api = reverse("api-audit")
    return page(
        request,
        "auditlog/audit.html",
        {
            "nav": "audit",
            "form": form,
            "entries": entries,
            "actions": ACTIONS,
            "newer": newer,
            "older": older,
            "first_page": f"{reverse('audit')}?{urlencode(query)}",
            "bad_cursor": bad_cursor,
            "json_url": f"{api}?{urlencode({**query, 'page_size': 500})}",
            "csv_url": f"{api}?{urlencode({**query, 'page_size': 500, 'format': 'csv'})}",
            "filtered": bool(query),
        },
        # The pager swaps the list; the filter form the form (its errors) and the list.
        partial="audit-list" if getattr(request.htmx, "target", None) == "audit-list" else "audit-body",
        status=200 if form.is_valid() or wants_partial(request) else 400,  # htmx swaps nothing on a 4xx
    )
