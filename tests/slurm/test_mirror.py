"""Bookings reach Slurm: whole-node leases and gangs become reservations; jobs run inside them, others wait."""

from __future__ import annotations

import time
from datetime import timedelta

from slurm_helpers import names, shown, slurm

from slurm.reconcile import run_pass


def _wait_for(predicate, seconds=15.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = predicate()
        if found:
            return found
        time.sleep(0.2)
    return predicate()


def test_a_whole_node_lease_is_a_reservation_that_runs_its_jobs_and_keeps_others_off(lab, book, tmp_path):
    """A lease now on berth-n1 is berth-<id> there for acme; a job in it gets the GPUs, one outside waits."""
    booked = book(length=timedelta(minutes=10))
    node = booked.reservation.allocations.get().node.name
    outcome = run_pass()
    name = f"berth-{booked.reservation.pk}"
    assert outcome.created == [name] and outcome.problems == []
    seen = shown(name)
    assert seen["Nodes"] == node and seen["Accounts"] == "acme"
    assert seen["EndTime"] == booked.reservation.ends_at.strftime("%Y-%m-%dT%H:%M:%S")

    inside, outside = tmp_path / "inside.out", tmp_path / "outside.out"
    job = slurm("sbatch", "--parsable", f"--reservation={name}", "--account=acme", "--gres=gpu:8", "--time=1",
                f"--output={inside}", "--wrap", "echo $SLURMD_NODENAME $CUDA_VISIBLE_DEVICES").strip()  # fmt: skip
    other = slurm("sbatch", "--parsable", f"--nodelist={node}", "--time=1", f"--output={outside}",
                  "--wrap", "echo ran").strip()  # fmt: skip
    assert _wait_for(lambda: inside.exists() and inside.read_text().strip()) == f"{node} 0,1,2,3,4,5,6,7"
    state = slurm("squeue", "-h", "-j", other, "-o", "%T %r")
    assert state.startswith("PENDING") and "ReqNodeNotAvail" in state
    assert not outside.exists()
    assert job


def test_a_job_of_another_account_is_refused_at_submission(lab, book):
    """globex's job may not use acme's reservation."""
    booked = book()
    run_pass()
    said = slurm("sbatch", f"--reservation=berth-{booked.reservation.pk}", "--account=globex", "--wrap", "true",
                 check=False)  # fmt: skip
    assert "Access denied to requested reservation" in said


def test_a_gang_of_whole_nodes_is_one_reservation_across_both_nodes(lab, book):
    booked = book(start=timedelta(hours=1), gang={"size": 2})
    run_pass()
    seen = shown(f"berth-{booked.reservation.pk}")
    assert seen["Nodes"] == "berth-n[1-2]" and seen["NodeCnt"] == "2"
    assert seen["StartTime"] == booked.reservation.starts_at.strftime("%Y-%m-%dT%H:%M:%S")


def test_a_gpu_level_booking_is_not_a_reservation(lab, book):
    """Slurm reserves nodes, not GPUs: two GPUs of a node stay a Berth booking only (docs/slurm.md)."""
    book(devices=[{"class": "gpu", "count": 2}])
    assert run_pass().created == [] and names() == set()


def test_a_gpu_job_outside_any_reservation_is_refused_by_berths_job_submit_plugin(lab):
    """slurm/job_submit.lua, installed by `make slurm` as an operator installs it: GPUs only under a booking."""
    said = slurm("sbatch", "--gres=gpu:1", "--wrap", "true", check=False)
    assert "GPUs here are booked in Berth" in said and "--reservation=berth-<id>" in said
    assert "Submitted batch job" in slurm("sbatch", "--output=/dev/null", "--wrap", "true")
