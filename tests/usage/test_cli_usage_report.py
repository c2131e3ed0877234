"""usage_report from a shell: a date that is none is refused like every other bad input (exit 2)."""

import json

import pytest


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--from", "2026-13-01"), "error: INVALID_INPUT: from: a date (2026-12-01); 2026-13-01 is no day"),
        (("--from", "2026-02-30"), "error: INVALID_INPUT: from: a date (2026-12-01); 2026-02-30 is no day"),
        (("--to", "2026-13-01"), "error: INVALID_INPUT: to: a date (2026-12-01); 2026-13-01 is no day"),
        (("--to", "2026-12-01T10:00Z"), "error: INVALID_INPUT: to: a date (2026-12-01), not a time"),
        (
            ("--from", "2026-12-10", "--to", "2026-12-01"),
            "error: INVALID_INPUT: to: must be on or after from",
        ),
        (("--group-by", "colour"), "error: INVALID_INPUT: groupBy: one or more of tenant, pool, model"),
    ],
)
def test_an_impossible_date_exits_2_with_its_code_and_no_traceback(shell, hosts, argv, message):
    code, out, err = shell("usage_report", *argv)
    assert code == 2 and out == ""
    assert err.startswith(message) and "Traceback" not in err and len(err.splitlines()) == 1


def test_a_period_of_one_day_given_from_a_shell_exits_0_and_names_it(shell, hosts):
    code, out, err = shell("usage_report", "--from", "2026-12-01", "--to", "2026-12-01", "--json")
    assert (code, err) == (0, "")
    assert json.loads(out) == {"from": "2026-12-01", "to": "2026-12-01", "rows": []}
