"""CSV that a spreadsheet opens as data: every CSV Berth writes goes through these writers.

A cell that starts with `=`, `+`, `-`, `@`, a tab or a carriage return is read by Excel, LibreOffice
and Google Sheets as a formula (`=HYPERLINK(...)` from a node's productName would run in finance's
spreadsheet). As OWASP's CSV injection guide recommends, such a cell gets a single quote in front,
which the spreadsheet shows as text; a number (`-3.5`, `+2`) stays as it is, so figures still add up.
Values that are not strings (ints, floats, None) are written as the csv module writes them.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def safe_cell(value: Any) -> Any:
    """Return the value a spreadsheet cannot read as a formula: `'=1+1` for `=1+1`; numbers untouched."""
    if not isinstance(value, str) or not value.startswith(FORMULA_STARTS):
        return value
    if _NUMBER.fullmatch(value):
        return value
    return "'" + value


class Writer:
    """csv.writer whose every cell passes safe_cell."""

    def __init__(self, out, **kwargs: Any) -> None:
        self._writer = csv.writer(out, **kwargs)

    def writerow(self, row: Iterable[Any]) -> Any:
        return self._writer.writerow([safe_cell(v) for v in row])

    def writerows(self, rows: Iterable[Iterable[Any]]) -> None:
        for row in rows:
            self.writerow(row)


class DictWriter(csv.DictWriter):
    """csv.DictWriter whose every cell, the header's included, passes safe_cell."""

    def __init__(self, out, fieldnames, **kwargs: Any) -> None:
        super().__init__(out, fieldnames, **kwargs)
        writer_options = {k: v for k, v in kwargs.items() if k not in ("restval", "extrasaction")}
        self.writer = Writer(out, **writer_options)


def csv_time(value: datetime | None) -> str:
    """Return a time as every CSV Berth writes one: RFC 3339 in UTC, microseconds, `Z` ("" for None)."""
    if value is None:
        return ""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
