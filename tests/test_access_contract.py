"""Who sees what is decided once, in capacity/access.py: no other module asks whether tenants are None.

A scope's `tenants` None means "every tenant" (operators, the command line). A module that tests it
itself decides who sees what in a seam of its own (a reused slug leaked through one); elsewhere the
scope is asked by name (`sees_every_tenant`, `reads_operators_words`, `allows`) or access.py is.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DECIDES = "capacity/access.py"
QUESTION = re.compile(r"\btenants is (not )?None\b")
# Not the project's modules: tests, the virtualenv, the embedded database, the built docs.
SKIPPED = {"tests", ".venv", ".pgdata", "site", "node_modules", "__pycache__"}


def _project_modules() -> list[Path]:
    found = []
    for folder, subfolders, files in os.walk(ROOT):
        # Pruned, not walked and filtered: the virtualenv and the database are large.
        subfolders[:] = [d for d in subfolders if d not in SKIPPED and not d.startswith(".")]
        found += [Path(folder, f) for f in files if f.endswith(".py")]
    return sorted(found)


def _askers() -> list[str]:
    found = []
    for path in _project_modules():
        name = path.relative_to(ROOT).as_posix()
        if name == DECIDES:
            continue
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            if QUESTION.search(line):
                found.append(f"{name}:{number}: {line.strip()}")
    return found


def test_the_scan_reads_the_project_and_finds_the_question_where_it_is_decided() -> None:
    """The scan sees the apps' modules, and access.py, which asks the question, among them."""
    names = {p.relative_to(ROOT).as_posix() for p in _project_modules()}
    assert {DECIDES, "capacity/render.py", "inventory/states.py", "webhooks/calendar.py"} <= names
    assert not any(n.startswith(("tests/", ".venv/")) for n in names)
    assert QUESTION.search((ROOT / DECIDES).read_text())


def test_no_module_but_access_asks_whether_tenants_are_none() -> None:
    """Every other module asks the scope by name (sees_every_tenant, ...), or asks access.py."""
    askers = _askers()
    assert askers == [], "ask capacity.access (Scope.sees_every_tenant, seen, ...) instead:\n" + "\n".join(
        askers
    )
