"""The GPU grid as one string: drawn for every node of a pool page, where a template's loops cost
more than everything else on the page (about a millisecond a node)."""

from __future__ import annotations

from django import template
from django.urls import reverse
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

register = template.Library()


def _cell(cell) -> str:
    title = escape(cell.title)
    kind = f"gpu s-{escape(cell.state)}{' spot' if cell.spot else ''}{' parted' if cell.slices else ''}"
    if cell.slices:
        inner = "".join(
            f'<span class="slice s-{escape(s.state)}{" spot" if s.spot else ""}" title="{escape(s.title)}"></span>'
            for s in cell.slices
        )
        inner = f'<span class="slices">{inner}</span>'
    else:
        inner = escape(cell.label)
    return f'<span class="{kind}" title="{title}" role="img" aria-label="{title}">{inner}</span>'


@register.simple_tag
def gpu_grid(row, big: bool = False) -> SafeString:
    """Return a node's GPU cells (with their MIG slices), or the block of a whole-node lease."""
    size = " big" if big else ""
    lease = getattr(row, "lease", None)
    if lease:
        spot = " spot" if lease.spot else ""
        text = escape(lease.text)
        if lease.reservation_id:
            text = f'<a href="{reverse("reservation-detail", args=[lease.reservation_id])}">{text}</a>'
        return mark_safe(
            f'<span class="lease-block{size}{spot}" style="--cells: {len(row.cells)}" title="{escape(lease.title)}">'
            f'<span aria-hidden="true">▣</span> {text}{" · spot" if lease.spot else ""}</span>\n'
        )
    return mark_safe(f'<div class="gpus{size}">{"".join(_cell(c) for c in row.cells)}</div>\n')
