"""A local replicated PostgreSQL pair for the failover tests: a primary and a synchronous standby.

`python -m devtools.ha up` builds both from the PostgreSQL server binaries on the machine (initdb,
pg_basebackup -R), each in its own git-ignored folder under .ha/ and on its own loopback port
(BERTH_HA_PORT and the next one; 55432 and 55433 by default), and waits until the standby is the
primary's synchronous standby: a commit is acknowledged only once the standby has its WAL, so a
primary killed after acknowledging loses nothing a promoted standby does not have. `down` stops
both (immediately) and removes .ha/. `status` prints each server's role. Run as root, the servers
run as the `postgres` user (initdb refuses root).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HA_DIR = ROOT / ".ha"
STANDBY_NAME = "berth_standby"


class Missing(RuntimeError):
    """The PostgreSQL server binaries are not on this machine."""


@dataclass(frozen=True)
class Pair:
    """Where the pair lives: ports, folders, and the binaries' folder."""

    bindir: Path
    primary_port: int
    standby_port: int
    base: Path = HA_DIR

    @property
    def primary(self) -> Path:
        return self.base / "primary"

    @property
    def standby(self) -> Path:
        return self.base / "standby"

    def url(self, *ports: int, dbname: str = "postgres") -> str:
        """Return a libpq URL for these ports (several: the multi-host form, read-write only)."""
        hosts = ",".join(f"127.0.0.1:{p}" for p in ports or (self.primary_port,))
        return f"postgresql://postgres@{hosts}/{dbname}?target_session_attrs=read-write&connect_timeout=3"


def find_bindir() -> Path:
    """Return the newest PostgreSQL server binaries' folder, or raise Missing."""
    candidates = sorted(
        Path("/usr/lib/postgresql").glob("*/bin"), key=lambda p: int(p.parent.name), reverse=True
    )
    found = shutil.which("pg_ctl")
    for bindir in ([Path(found).parent] if found else []) + candidates:
        if all((bindir / tool).exists() for tool in ("initdb", "pg_ctl", "pg_basebackup", "postgres")):
            return bindir
    raise Missing("no PostgreSQL server binaries (initdb, pg_ctl, pg_basebackup): apt-get install postgresql")


def pair() -> Pair:
    """Return the pair as the environment sets it (BERTH_HA_PORT, default 55432)."""
    port = int(os.environ.get("BERTH_HA_PORT", "55432"))
    return Pair(find_bindir(), port, port + 1)


def _run(p: Pair, tool: str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    command = [str(p.bindir / tool), *args]
    if os.geteuid() == 0:
        command = ["runuser", "-u", "postgres", "--", *command]
    return subprocess.run(command, capture_output=True, text=True, check=check, timeout=120)


def _chown(path: Path) -> None:
    if os.geteuid() == 0:
        shutil.chown(path, "postgres", "postgres")


def down(p: Pair) -> None:
    """Stop both servers at once and remove their folders."""
    for folder in (p.standby, p.primary):
        if (folder / "postmaster.pid").exists():
            _run(p, "pg_ctl", "-D", str(folder), "-m", "immediate", "-w", "stop", check=False)
    shutil.rmtree(p.base, ignore_errors=True)


def up(p: Pair) -> None:
    """Build and start the primary and its synchronous standby; wait until replication is synchronous."""
    down(p)
    p.base.mkdir()
    _chown(p.base)
    _run(p, "initdb", "-D", str(p.primary), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
    with open(p.primary / "postgresql.conf", "a") as conf:
        conf.write(
            f"\nport = {p.primary_port}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '{p.base}'\n"
            f"wal_level = replica\nmax_wal_senders = 5\nsynchronous_commit = on\n"
            f"synchronous_standby_names = '{STANDBY_NAME}'\nwal_keep_size = '256MB'\n"
        )
    _run(p, "pg_ctl", "-D", str(p.primary), "-l", str(p.base / "primary.log"), "-w", "start")
    conninfo = f"host=127.0.0.1 port={p.primary_port} user=postgres application_name={STANDBY_NAME}"
    _run(p, "pg_basebackup", "-d", conninfo, "-D", str(p.standby), "-R", "-X", "stream", "--no-sync")
    with open(p.standby / "postgresql.auto.conf", "a") as conf:
        # Promoted, it has no standby of its own: waiting for one (the primary's setting, copied by
        # pg_basebackup) would hold every commit forever. Patroni's synchronous_mode does the same.
        conf.write(f"\nport = {p.standby_port}\nsynchronous_standby_names = ''\n")
    _run(p, "pg_ctl", "-D", str(p.standby), "-l", str(p.base / "standby.log"), "-w", "start")
    for _ in range(100):
        if sync_state(p) == "sync":
            return
        time.sleep(0.1)
    raise RuntimeError(f"the standby did not become synchronous: {sync_state(p)!r}")


def _sql(p: Pair, port: int, query: str) -> str:
    found = _run(p, "psql", "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "-Atc", query, check=False)
    return found.stdout.strip() if found.returncode == 0 else ""


def sync_state(p: Pair) -> str:
    """Return the standby's sync_state as the primary sees it ('' when it is not streaming)."""
    return _sql(
        p,
        p.primary_port,
        f"SELECT sync_state FROM pg_stat_replication WHERE application_name = '{STANDBY_NAME}'",
    )


def kill_primary(p: Pair) -> None:
    """Kill the primary's postmaster with SIGKILL, as a crashed machine would stop it."""
    pid = int((p.primary / "postmaster.pid").read_text().split()[0])
    os.kill(pid, signal.SIGKILL)
    for _ in range(100):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)


def promote(p: Pair) -> None:
    """Promote the standby to primary and wait until it takes writes."""
    _run(p, "pg_ctl", "-D", str(p.standby), "-w", "promote")


def status(p: Pair) -> dict[str, str]:
    """Return each server's role: primary, standby or down."""
    roles = {}
    for name, port in (("primary", p.primary_port), ("standby", p.standby_port)):
        answer = _sql(p, port, "SELECT pg_is_in_recovery()")
        roles[f"{name} :{port}"] = {"t": "standby", "f": "primary"}.get(answer, "down")
    return roles


def main(argv: list[str]) -> int:
    try:
        p = pair()
    except Missing as why:
        print(f"skipped: {why}")
        return 0
    command = argv[0] if argv else "status"
    if command == "up":
        up(p)
        print(f"primary on 127.0.0.1:{p.primary_port}, synchronous standby on 127.0.0.1:{p.standby_port}")
        print(f"DATABASE_URL={p.url(p.primary_port, p.standby_port, dbname='berth')}")
    elif command == "down":
        down(p)
        print("stopped and removed .ha/")
    elif command == "status":
        for name, role in status(p).items():
            print(f"{name}: {role}")
    else:
        print("usage: python -m devtools.ha up|down|status")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
