"""The team pages' forms (policy/teams.py): a new team, a member, a quota row, a share.

A service's refusal names its field (`resource: …`); `attach` puts it next to that field, and a
refusal that names none above the form.
"""

from __future__ import annotations

from django import forms

from inventory.models import Pool

FIGURE_MAX = 10**9


class TeamForm(forms.Form):
    """A new team: its slug (its id in the API, the tenantId) and its name."""

    slug = forms.CharField(max_length=50, help_text="lower-case letters, digits and '-': acme, ml-research")
    name = forms.CharField(max_length=200, help_text="as people read it: Acme Research")


class NameForm(forms.Form):
    """A team's new name (its slug never changes here: it is the API's tenantId)."""

    name = forms.CharField(max_length=200, help_text="as people read it")


class MemberForm(forms.Form):
    """A person to add to the team, by username."""

    user = forms.CharField(label="Username", max_length=150, help_text="someone who has signed in once")


class QuotaForm(forms.Form):
    """A limit for one resource: the most the team may hold at once."""

    resource = forms.CharField(
        max_length=100, initial="gpu", help_text="gpu, mig-1g.10gb, vcpu, or * for every other resource"
    )
    limit = forms.IntegerField(min_value=0, max_value=10**12, help_text="held at once, 0 or more")


class TeamShareForm(forms.Form):
    """The team's share of one pool, as the pool page's and the API's; blank limits mean none."""

    pool = forms.ModelChoiceField(Pool.objects.filter(archived=False).order_by("slug"), to_field_name="slug")
    guaranteed = forms.IntegerField(label="Guaranteed GPUs", min_value=0, max_value=FIGURE_MAX)
    borrowing = forms.IntegerField(
        label="Borrowing limit",
        min_value=0,
        max_value=FIGURE_MAX,
        required=False,
        help_text="blank: no limit",
    )
    lending = forms.IntegerField(
        label="Lending limit", min_value=0, max_value=FIGURE_MAX, required=False, help_text="blank: all"
    )


# A refusal's field name (the services' and the API's) → the form's field.
FIELD_OF = {
    "guaranteedGpus": "guaranteed",
    "borrowingLimitGpus": "borrowing",
    "lendingLimitGpus": "lending",
}


def attach(form: forms.Form, message: str) -> str:
    """Put a service's refusal next to the field it names; return it when it names none ("" otherwise)."""
    name, sep, rest = message.partition(": ")
    field = FIELD_OF.get(name, name)
    if sep and field in form.fields:
        form.add_error(field, rest)
        return ""
    if "may not use pool" in message and "pool" in form.fields:
        form.add_error("pool", message)
        return ""
    return message
