"""Pages, docs and help texts say what Berth does today: no "in a later part" about a shipped feature."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Where people read Berth's own words: the pages, the docs, and the help texts in the code.
APPS = (
    "capacity",
    "inventory",
    "policy",
    "usage",
    "webhooks",
    "whatif",
    "identity",
    "auditlog",
    "config",
    "slurm",
    "series",
)
CODE = [p for app in APPS for p in (ROOT / app).rglob("*.py") if "migrations" not in p.parts]
READ = sorted({*ROOT.glob("templates/**/*.html"), *ROOT.glob("docs/**/*.md"), ROOT / "README.md", *CODE})
# Promises of later work, and "does not use/read ... yet" about what placement does.
STALE = re.compile(
    r"in a later part|read by placement in a later|(?:comes?|coming) later"
    r"|\bdoes(?: not|n't) (?:use|read|enforce) (?:it|them|this|these|shares)(?: \w+)? yet\b"
    r"|\bnot (?:yet )?(?:used|read|enforced) by placement\b",
    re.IGNORECASE,
)


def test_the_scan_reads_pages_docs_and_code() -> None:
    names = {p.relative_to(ROOT).as_posix() for p in READ}
    assert {"templates/capacity/pool_detail.html", "docs/index.md", "policy/policy_section.py"} <= names
    assert STALE.search("Shares are recorded; placement does not use them yet")
    assert STALE.search("read by placement in a later part") and STALE.search("the fair queue comes later")


def test_no_page_doc_or_help_text_promises_a_shipped_feature_for_later() -> None:
    found = [
        f"{p.relative_to(ROOT)}:{n}: {line.strip()}"
        for p in READ
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), start=1)
        if STALE.search(line)
    ]
    assert found == [], "say what Berth does today:\n" + "\n".join(found)
