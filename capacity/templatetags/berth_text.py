"""Template filters for how names break across lines."""

from __future__ import annotations

import re

from django import template
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

register = template.Library()

_AFTER = re.compile(r"([./=_-])")


@register.filter
def breakable(text: str) -> SafeString:
    """Return `text` escaped, with a line-break opportunity after each `.` `/` `=` `_` `-`.

    A key such as bc.dev/cap.binding.kubernetes then wraps between its parts, never mid-word.
    """
    return mark_safe(_AFTER.sub(r"\1<wbr>", str(escape(text))))
