"""The reservation list's GPU use cells: drawn into a kept list on every request."""

from __future__ import annotations

import re

from django.utils.html import format_html
from django.utils.safestring import mark_safe

from capacity import services


def usage_cell(usage: dict | None) -> str:
    """Return the list's GPU use cell: the mean GPU % so far, its p95 in the title; a dash before any sample."""
    if not usage or usage.get("gpuPercentMean") is None:
        return mark_safe('<span class="muted">—</span>')
    return format_html(
        '<span title="{} % at the 95th percentile over {} device-minutes">{} %</span>',
        usage["gpuPercentP95"],
        usage["samples"],
        usage["gpuPercentMean"],
    )


# What a kept list holds where a row's GPU use goes: samples change it every minute, no version does.
USAGE_PLACEHOLDER = re.compile(r"<!--berth-usage-(\d+)-->")


def fill_usage(html: str) -> str:
    """Put each listed reservation's GPU use, read now (one statement), where the list left a placeholder."""
    ids = [int(pk) for pk in USAGE_PLACEHOLDER.findall(html)]
    if not ids:
        return html
    usage = services.usage_for(ids)
    return USAGE_PLACEHOLDER.sub(lambda m: usage_cell(usage.get(int(m.group(1)))), html)
