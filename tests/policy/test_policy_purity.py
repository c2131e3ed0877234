"""Policy's pure halves stay pure (the fair queue's order and decay, the shares' verdict): no Django, no I/O
modules at import (as capacity.placement)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# The policy app's modules that read no database: their tests here need none.
PURE = ("policy.fair_order", "policy.fairshare", "policy.share_verdict")


def test_importing_the_pure_policy_modules_loads_no_django_module() -> None:
    script = (
        "import importlib, json, sys\n"
        f"for name in {PURE!r}:\n"
        "    importlib.import_module(name)\n"
        "print(json.dumps(sorted(m for m in sys.modules if m == 'django' or m.startswith('django.'))))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=True, env={"PATH": ""}
    )
    assert json.loads(out.stdout) == []


def test_the_pure_policy_modules_import_only_the_standard_library_they_compute_with() -> None:
    allowed = {"__future__", "collections", "dataclasses", "math", "typing"}
    for name in PURE:
        path = ROOT / (name.replace(".", "/") + ".py")
        for line in path.read_text().splitlines():
            words = line.split()
            if len(words) >= 2 and words[0] in ("import", "from"):
                assert words[1].split(".")[0] in allowed, f"{path.name}: {line.strip()}"
