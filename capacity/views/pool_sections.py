"""The pool page's settings sections (Shares, Policy): drawn by capacity, written by the app that owns them.

The pool's rules (the `policy` app) register each section when the app is ready; the pool page
(views.pools) draws them in registration order into its kept "settings" fragment and sends a
section's form to it (`pools/<slug>/<name>/`), and never imports the app. With none registered the
page has no settings.

A panel (the maintenance app's windows) is drawn by its app on a pool's page and a node's page
alike, each in a kept fragment of its own, below capacity's sections; its forms post to the app's
own views, which answer with capacity's page (views.pools.pool_page, views.nodes.node_page).

The quota cards of the booking and reservations pages (capacity/quota_bars.html: what a card has)
are read by the app that administers quotas (policy.quota_cards); with no reader, the pages draw none.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.http import HttpRequest


@dataclass(frozen=True)
class Section:
    """One settings section of the pool page: its partial in capacity/pool_detail.html and its form.

    `context(request, pool, form, error, placeholder)`: what the partial draws (`form` and `error`
    those sent back with errors); given `placeholder`, what is read fresh per page (`fresh`) is left
    as that text in the kept fragment. `apply(request, pool)`: the posted form's change, (None, "")
    when done, else (the form, an error outside its fields). `changes_at(pool, now, context)`: when
    time alone changes what it drew. `own(request, pool)`: the section is this reader's alone now
    (a secret shown once), so the fragment is not kept.
    """

    name: str
    context: Callable[[HttpRequest, Any, Any, str, str], dict]
    apply: Callable[[HttpRequest, Any], tuple[Any, str]]
    placeholder: str = ""
    fresh: Callable[[HttpRequest, Any], str] | None = None
    changes_at: Callable[[Any, datetime, dict], datetime | None] | None = None
    own: Callable[[HttpRequest, Any], bool] | None = None


_SECTIONS: dict[str, Section] = {}


def register_section(section: Section) -> None:
    """Add a section to the pool page; one registered again under its name is replaced in place."""
    _SECTIONS[section.name] = section


def sections() -> tuple[Section, ...]:
    """Return the sections in the order the page draws them."""
    return tuple(_SECTIONS.values())


def section(name: str) -> Section | None:
    """Return the section of that name, or None."""
    return _SECTIONS.get(name)


@dataclass(frozen=True)
class Panel:
    """A section another app draws on the pool's and the node's pages (`pool=` or `node=`).

    `draw(request, pool=|node=)`: the kept fragment's draw, csrf_token -> (html, when time alone
    changes it), kept under the pool's booking version. `html(request, pool=|node=, **sent)`: the
    panel drawn now, with what its form sent back (a page answering that form).
    """

    name: str
    draw: Callable[..., Callable[[str], tuple[str, datetime | None]]]
    html: Callable[..., str]


_PANELS: dict[str, Panel] = {}


def register_panel(panel: Panel) -> None:
    """Add a panel to the pool and node pages; one registered again under its name is replaced."""
    _PANELS[panel.name] = panel


def panels() -> tuple[Panel, ...]:
    """Return the panels in the order the pages draw them."""
    return tuple(_PANELS.values())


_QUOTA_READERS: dict[str, Callable[[Any, Any], list]] = {}


def register_quota_cards(booking: Callable[[Any, Any], list], listed: Callable[[Any, Any], list]) -> None:
    """Set the quota cards' readers: `booking(form, scope)` for the booking form, `listed(tenants, scope)`."""
    _QUOTA_READERS.update(booking=booking, listed=listed)


def booking_quota(form, scope) -> list:
    """Return the cards of the tenant the booking form is for, over the window it asks for."""
    reader = _QUOTA_READERS.get("booking")
    return reader(form, scope) if reader else []


def quota_cards(tenants, scope) -> list:
    """Return the cards of these tenants over a week from now."""
    reader = _QUOTA_READERS.get("listed")
    return reader(tenants, scope) if reader else []
