"""What Slurm says is read as typed, bounded input; what Berth says is checked before it reaches a command line."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from slurm import scontrol
from slurm.scontrol import SlurmError, SlurmInputError


def test_a_record_is_key_value_pairs_and_a_reason_keeps_its_spaces():
    line = "NodeName=gpu01 State=IDLE+DRAIN Reason=bad fan [root@2026-12-07T08:00:00] Port=1"
    assert scontrol.records(line + "\n") == [
        {
            "NodeName": "gpu01",
            "State": "IDLE+DRAIN",
            "Reason": "bad fan [root@2026-12-07T08:00:00]",
            "Port": "1",
        }
    ]
    assert scontrol.records("No reservations in the system\n") == []


def test_too_long_a_line_or_too_many_lines_are_refused_unread():
    with pytest.raises(SlurmError, match="a line of"):
        scontrol.records("ReservationName=" + "x" * scontrol.MAX_LINE)
    with pytest.raises(SlurmError, match="lines"):
        scontrol.records("ReservationName=a\n" * (scontrol.MAX_LINES + 1))


@pytest.mark.parametrize(
    ("hostlist", "names"),
    [
        ("berth-n[1-2]", ("berth-n1", "berth-n2")),
        ("gpu[01-03,07],login1", ("gpu01", "gpu02", "gpu03", "gpu07", "login1")),
        ("(null)", ()),
        ("a", ("a",)),
    ],
)
def test_a_hostlist_expands_as_slurm_writes_it(hostlist, names):
    assert scontrol.expand_hostlist(hostlist) == names


def test_a_hostlist_past_the_bound_or_unreadable_is_refused():
    with pytest.raises(SlurmError, match="more than"):
        scontrol.expand_hostlist("n[0-99999]")
    with pytest.raises(SlurmError, match="cannot read"):
        scontrol.expand_hostlist("n[a-b]")


@pytest.mark.parametrize("bad", ["a b", "x;rm -rf /", "-flag", "a,b", "n[1-2]", "Nodes=all", "", "é"])
def test_names_that_would_change_the_command_are_refused_before_a_process_starts(bad):
    with pytest.raises(SlurmInputError):
        scontrol.check_name(bad)
    with pytest.raises(SlurmInputError):
        scontrol.check_account(bad)
    with pytest.raises(SlurmInputError):
        scontrol.create("berth-1", (bad,), datetime.now(UTC), datetime.now(UTC))


def test_accounts_are_lower_case_as_sacctmgr_keeps_them():
    assert scontrol.check_account("proj-acme_1.a") == "proj-acme_1.a"
    with pytest.raises(SlurmInputError):
        scontrol.check_account("Acme")


def test_times_go_to_slurm_in_whole_utc_seconds_the_end_rounded_up():
    at = datetime(2026, 12, 7, 8, 0, 0, 250_000, tzinfo=UTC)
    assert scontrol.slurm_time(at) == "2026-12-07T08:00:00"
    assert scontrol.slurm_end(at) == "2026-12-07T08:00:01"
    assert scontrol.parse_time("2026-12-07T08:00:01") == at.replace(second=1, microsecond=0)
    assert scontrol.parse_time("Unknown") is None
