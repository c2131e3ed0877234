"""bench_slurm, the figures of docs/slurm.md, runs against the local cluster (a few bookings here)."""

from __future__ import annotations

import io

from django.core.management import call_command


def test_the_bench_measures_mirroring_and_a_pass(clean_slurm, transactional_db):
    out = io.StringIO()
    call_command("bench_slurm", count=3, scale=6, stdout=out)
    text = out.getvalue()
    assert "booking -> scontrol shows it (3): p50" in text
    assert "steady pass (6 Berth bookings, 6 Slurm reservations, nothing to do)" in text
    assert "first pass (creates every reservation)" in text and "6 created" in text
