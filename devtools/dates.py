"""Run the date-sensitive tests at a fixed set of days: every weekday and the awkward month ends.

`python -m devtools.dates [pytest args]` runs the tests marked `dates` once per day in DAYS, each
in a process whose clock starts at that instant (libfaketime's `faketime`, Debian's `faketime`
package), with an embedded Postgres of its own started under the same clock, so Python's now and
the database's now() agree. A test that passes today but not on a Friday or on 29 February fails
here, whatever day CI runs. Each day's database is stopped and removed afterwards.

Tests that take their clock as an argument do not need this; it catches the ones that read the
real one (an API request, the database's now()).

A test marked `dates` must not wait with a timeout: under Debian's libfaketime 0.9.10 Python's timed
waits (Event.wait, a lock's timeout, the pool-lease placer's wait, long polls) never return, and
FAKETIME_DONT_FAKE_MONOTONIC breaks time.sleep instead (EINVAL). Found running the whole suite at
01:10 UTC: the 28 tests that failed there were all such waits.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Days across the week at varied hours (a Monday just before 09:00 UTC, where "next Monday"
# turns in the tests), a year's end and a leap day near midnight UTC. Each costs a fresh
# database (about a minute in CI); tests that take the clock as an argument run at more days
# (tests/db/services/test_series_on_every_weekday.py reads ALL_DAYS).
DAYS = (
    "2026-12-07 08:59:30",
    "2026-12-08 23:30:00",
    "2026-12-10 00:30:00",
    "2026-12-11 17:00:00",
    "2026-12-13 23:59:00",
    "2028-02-29 23:40:00",
)
ALL_DAYS = (
    *DAYS,
    "2026-12-07 09:00:30",
    "2026-12-09 12:00:00",
    "2026-12-12 06:00:00",
    "2026-12-31 23:40:00",
    "2027-02-28 23:40:00",
    "2027-03-31 22:00:00",
)


def _stop(pgdata: Path) -> None:
    """Stop the embedded server in `pgdata` (pg_ctl refuses root: run it as the pgserver user)."""
    pg_ctl = next(ROOT.glob(".venv/lib/python3.*/site-packages/pgserver/pginstall/bin/pg_ctl"), None)
    if pg_ctl is None or not (pgdata / "postmaster.pid").exists():
        return
    runuser = ["runuser", "-u", "pgserver", "--"] if os.geteuid() == 0 else []
    subprocess.run([*runuser, str(pg_ctl), "-D", str(pgdata), "-m", "immediate", "-w", "stop"], check=False)


def main(argv: list[str]) -> int:
    """Run `pytest -m dates` at every day in DAYS; return non-zero if any day failed."""
    faketime = shutil.which("faketime")
    if faketime is None:
        print("devtools.dates: faketime is missing (apt-get install faketime)", file=sys.stderr)
        return 2
    failed = []
    for day in DAYS:
        base = Path(tempfile.mkdtemp(prefix="berth-dates-"))
        base.chmod(0o755)  # the embedded server runs as its own user and needs to reach its folder
        pgdata = base / "pgdata"
        print(f"== date-sensitive tests at {day} UTC", flush=True)
        env = {"BERTH_PGDATA": str(pgdata), "TZ": "UTC", "FAKETIME_DONT_RESET": "1"}
        cmd = [faketime, day, sys.executable, "-m", "pytest", "-m", "dates", "-p", "no:cacheprovider", *argv]
        try:
            # Never a server's database: its clock is not the one faked here.
            kept = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "DATABASE_REPLICA_URL")}
            code = subprocess.run(cmd, cwd=ROOT, env={**kept, **env}, check=False).returncode
        finally:
            _stop(pgdata)
            shutil.rmtree(base, ignore_errors=True)
        if code != 0:
            failed.append(day)
    print(f"== date-sensitive tests: {len(DAYS) - len(failed)} of {len(DAYS)} days passed", flush=True)
    for day in failed:
        print(f"   failed at {day}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
