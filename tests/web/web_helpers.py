"""Reading rendered pages in tests: the form field a message sits next to, and partial-vs-page checks."""

import re

# Headers of an htmx request, as the Django test client takes them.
HX = {"HTTP_HX_REQUEST": "true"}
FIELD_RE = re.compile(r'<div class="(?:[^"]* )?field(?: [^"]*)?">(.*?)</div>', re.S)


def field_block(html: str, name: str) -> str:
    """Return the markup of the form field whose input is named `name` (its label, input and errors)."""
    for block in FIELD_RE.findall(html):
        if f'name="{name}"' in block:
            return block
    raise AssertionError(f"no field named {name!r} in the page")


def error_next_to(html: str, name: str) -> str:
    """Return the error text shown in the field block of `name` ("" when none)."""
    block = field_block(html, name)
    return " ".join(re.findall(r'<span class="field-error"[^>]*>(.*?)</span>', block, re.S)).strip()


def is_full_page(html: str) -> bool:
    return "<html" in html and "</body>" in html
