"""docs/webhooks.md's events table names exactly the events a subscription accepts."""

import re
from pathlib import Path

from webhooks.models import EVENT_TYPES

PAGE = Path(__file__).resolve().parents[2] / "docs" / "webhooks.md"


def documented() -> set[str]:
    table = PAGE.read_text().split("## Events", 1)[1].split("\n\n", 2)[1]
    names: set[str] = set()
    for line in table.splitlines()[2:]:
        last = ""
        for name in re.findall(r"`([a-z_.]+)`", line.split("|")[1]):
            last = last.split(".")[0] + name if name.startswith(".") else name
            names.add(last)
    return names


def test_the_events_table_lists_every_event_type_and_no_other():
    assert documented() == set(EVENT_TYPES)
