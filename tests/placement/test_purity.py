"""The placement core stays pure: no Django, no I/O modules at import."""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import capacity.placement

ROOT = Path(__file__).resolve().parents[2]


def _modules() -> list[str]:
    return ["capacity.placement"] + [
        f"capacity.placement.{m.name}" for m in pkgutil.iter_modules(capacity.placement.__path__)
    ]


def test_importing_every_placement_module_loads_no_django_module() -> None:
    script = (
        "import importlib, json, sys\n"
        f"for name in {_modules()!r}:\n"
        "    importlib.import_module(name)\n"
        "print(json.dumps(sorted(m for m in sys.modules if m == 'django' or m.startswith('django.'))))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=True, env={"PATH": ""}
    )
    assert json.loads(out.stdout) == []


def test_placement_modules_import_only_the_allowed_standard_library() -> None:
    # Pure computation only: difflib names the nearest selector key, heapq orders the earliest search.
    allowed = {
        "__future__",
        "collections",
        "dataclasses",
        "difflib",
        "bisect",
        "enum",
        "heapq",
        "itertools",
        "math",
        "re",
        "typing",
    }
    # The error codes are shared with the rest of Berth; their module is standard library only too.
    shared = {"config.errors"}
    source_dir = Path(capacity.placement.__file__).parent
    for path in [*source_dir.glob("*.py"), ROOT / "config" / "errors.py"]:
        for line in path.read_text().splitlines():
            words = line.split()
            if len(words) >= 2 and words[0] in ("import", "from") and not words[1].startswith("."):
                assert words[1] in shared or words[1].split(".")[0] in allowed, f"{path.name}: {line.strip()}"
