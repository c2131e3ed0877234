"""Measurement only (not committed): the walk of one create and statements per placement."""

import os
import sys

from django.db import connection
from django.test.utils import CaptureQueriesContext

from booking import ask, reserve
from capacity.services import lookups

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def walk(fn):
    files = []

    def tracer(frame, event, arg):
        f = frame.f_code.co_filename
        if f.startswith(ROOT) and "/tests/" not in f and "/.venv/" not in f and "site-packages" not in f:
            rel = os.path.relpath(f, ROOT)
            if not files or files[-1] != rel:
                files.append(rel)
        return None

    sys.setprofile(tracer)
    try:
        fn()
    finally:
        sys.setprofile(None)
    seen, returns = set(), 0
    for i, f in enumerate(files):
        if f in seen:
            returns += 1
        seen.add(f)
    return len(files), len(seen), returns, files


def test_measure(tenant, make_node):
    for i in range(4):
        make_node(f"node-{i}", gpus=8)
    lookups.forget_all()
    reserve(ask(1))  # warm imports
    out = []
    for label, forget in (("cold lookup", True), ("kept lookup", False)):
        if forget:
            lookups.forget_all()
        steps, nfiles, returns, files = walk(lambda: reserve(ask(1)))
        out.append(f"{label}: steps={steps} files={nfiles} returns={returns}")
        out.append("  " + " > ".join(files))
    for label, forget in (("cold lookup", True), ("kept lookup", False)):
        if forget:
            lookups.forget_all()
        with CaptureQueriesContext(connection) as q:
            reserve(ask(1))
        out.append(f"statements {label}: {len(q.captured_queries)}")
        out.extend("    " + x["sql"][:150].replace("\n", " ") for x in q.captured_queries)
    with open(os.environ.get("MEASURE_OUT", "/tmp/w4/measure.txt"), "w") as fh:
        fh.write("\n".join(out) + "\n")
