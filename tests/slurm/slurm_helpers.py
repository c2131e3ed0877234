"""Helpers of the bridge's tests: Slurm's commands against the local cluster, and the clock."""

from __future__ import annotations

import subprocess
import time
from datetime import UTC, datetime

from devtools import slurm_cluster

CONF = str(slurm_cluster.CONF)


def slurm(*args: str, check: bool = True) -> str:
    """Run a Slurm command (scontrol, sbatch, squeue, scancel) against the local cluster; return its output."""
    done = subprocess.run(
        args, capture_output=True, text=True, env={**slurm_cluster.env(), "TZ": "UTC"}, timeout=20
    )
    if check and done.returncode != 0:
        raise AssertionError(f"{' '.join(args)}: {done.stderr.strip()}")
    return done.stdout + done.stderr


def shown(name: str) -> dict[str, str] | None:
    """Return a reservation as `scontrol -o show reservation` gives it, or None."""
    out = slurm("scontrol", "-o", "show", "reservation", name, check=False)
    if "not found" in out or "ReservationName=" not in out:
        return None
    return dict(w.split("=", 1) for w in out.split() if "=" in w)


def names() -> set[str]:
    out = slurm("scontrol", "-o", "show", "reservation", check=False)
    return {w.split("=", 1)[1] for w in out.split() if w.startswith("ReservationName=")}


def wipe() -> None:
    """Cancel every job and delete every reservation (jobs first: a reservation in use cannot go)."""
    slurm("scancel", "--full", "-u", "root", check=False)
    for node in slurm_cluster.NODES:
        slurm("scontrol", "update", f"NodeName={node}", "State=RESUME", check=False)
    deadline = time.monotonic() + 10
    while names() and time.monotonic() < deadline:
        for name in names():
            slurm("scontrol", "delete", f"ReservationName={name}", check=False)
        time.sleep(0.1)


def now() -> datetime:
    return datetime.now(UTC)


def ms(at: datetime) -> int:
    return int(at.timestamp() * 1000)
