"""The pass converges: releases, preemptions and drift in Slurm end as Berth holds them; Slurm down is caught up."""

from __future__ import annotations

import io
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from slurm_helpers import names, now, shown, slurm

from capacity import services
from slurm.models import BridgedPool
from slurm.reconcile import run_pass
from slurm.scontrol import slurm_time
from slurm.services import unbridge as services_unbridge


def test_a_release_before_the_start_deletes_the_reservation(lab, book):
    booked = book(start=timedelta(hours=2))
    run_pass()
    name = f"berth-{booked.reservation.pk}"
    assert shown(name) is not None
    services.release(booked.reservation.pk)
    assert run_pass().ended == [name] and shown(name) is None


def test_an_early_release_cuts_a_started_reservation_short_and_its_job_keeps_running(lab, book, tmp_path):
    booked = book(length=timedelta(hours=1))
    run_pass()
    name = f"berth-{booked.reservation.pk}"
    job = slurm("sbatch", "--parsable", f"--reservation={name}", "--account=acme", "--time=2",
                f"--output={tmp_path / 'out'}", "--wrap", "sleep 30").strip()  # fmt: skip
    services.release(booked.reservation.pk)
    at = now()
    assert run_pass(at).ended == [name]
    seen = shown(name)
    assert seen is None or seen["EndTime"] <= slurm_time(at + timedelta(seconds=3))
    assert slurm("squeue", "-h", "-j", job, "-o", "%T").strip() in ("RUNNING", "PENDING", "CONFIGURING")


def test_a_preempted_spot_lease_loses_its_reservation_to_the_one_that_took_it(lab, book):
    spot = book(tenant="globex", priority="spot", gang={"size": 2}).reservation
    run_pass()
    assert shown(f"berth-{spot.pk}")["Accounts"] == "globex"
    taker = book(tenant="acme")
    assert taker.outcome.preempted == (spot.pk,)
    outcome = run_pass()
    assert outcome.ended == [f"berth-{spot.pk}"] and outcome.problems == []
    assert shown(f"berth-{taker.reservation.pk}")["Accounts"] == "acme"


def test_the_pass_creates_the_missing_fixes_the_changed_and_ends_the_strays(lab, book):
    kept, missing = book(start=timedelta(hours=1)), book(start=timedelta(hours=3))
    run_pass()
    start = now() + timedelta(hours=5)
    slurm("scontrol", "create", "reservation", "ReservationName=berth-999999", "Nodes=berth-n2", "Users=root",
          f"StartTime={slurm_time(start)}", "Duration=10")  # fmt: skip
    slurm("scontrol", "update", f"ReservationName=berth-{kept.reservation.pk}", "Accounts=globex")
    slurm("scontrol", "delete", f"ReservationName=berth-{missing.reservation.pk}")
    outcome = run_pass()
    assert outcome.created == [f"berth-{missing.reservation.pk}"]
    assert outcome.updated == [f"berth-{kept.reservation.pk}"] and outcome.ended == ["berth-999999"]
    assert shown(f"berth-{kept.reservation.pk}")["Accounts"] == "acme"
    assert names() == {f"berth-{kept.reservation.pk}", f"berth-{missing.reservation.pk}"}
    assert run_pass().summary() == ""


def _metric(client, line_start: str) -> float:
    text = client.get("/metrics").content.decode()
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(line_start))


def test_with_slurm_unreachable_bookings_go_on_and_the_bridge_says_it_is_behind_then_catches_up(
    lab, book, settings, operator, client_for
):
    unreachable = 'berth_slurm_passes_total{result="unreachable"}'
    before = _metric(client_for(operator), unreachable)
    good = settings.SLURM
    settings.SLURM = {**good, "CONF": "/nonexistent/slurm.conf", "TIMEOUT": 1}
    booked = book(start=timedelta(hours=1))
    assert booked.reservation.status == "placed"
    outcome = run_pass()
    assert not outcome.reached
    bridge = BridgedPool.objects.get()
    assert bridge.last_ok_at is None and bridge.problems[0]["message"].startswith(
        "Slurm unreachable: scontrol"
    )
    assert shown(f"berth-{booked.reservation.pk}") is None
    assert _metric(client_for(operator), unreachable) == before + 1
    with pytest.raises(CommandError, match=r"problem\(s\) found"):
        call_command("check_capacity", stdout=(out := io.StringIO()))
    assert "problem: slurm: pool lab-pool: behind (Slurm last reached never)" in out.getvalue()
    settings.SLURM = good
    assert run_pass().created == [f"berth-{booked.reservation.pk}"]
    bridge.refresh_from_db()
    assert bridge.last_ok_at == bridge.last_pass_at and bridge.problems == []
    call_command("check_capacity", stdout=io.StringIO())  # in step again: no problem


def test_a_maintenance_window_is_a_maint_reservation(lab):
    from maintenance.windows import schedule_window

    start = now().replace(microsecond=0) + timedelta(hours=2)
    window = schedule_window(
        {"nodes": ["berth-n2"], "start": start.isoformat(), "end": (start + timedelta(hours=1)).isoformat()},
        by="test",
    ).window
    run_pass()
    seen = shown(f"berth-mw-{window.pk}")
    assert seen["Nodes"] == "berth-n2" and "MAINT" in seen["Flags"] and seen["StartTime"] == slurm_time(start)


def test_a_pool_no_longer_bridged_loses_its_reservations_and_slurm_conditions(lab, book):
    booked = book(start=timedelta(hours=1))
    slurm("scontrol", "update", "NodeName=berth-n2", "State=DRAIN", "Reason=test")
    run_pass()
    assert shown(f"berth-{booked.reservation.pk}") is not None
    services_unbridge("lab-pool")
    outcome = run_pass()
    assert outcome.ended == [f"berth-{booked.reservation.pk}"] and outcome.conditions == 1
    assert names() == set()
