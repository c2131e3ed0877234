"""Talk to Slurm through `scontrol`: arguments as a list (no shell), names checked, output read as bounded input.

The command and SLURM_CONF are settings (`SLURM["SCONTROL"]`, `SLURM["CONF"]`): in production the
command runs as the SlurmUser (for example `["sudo", "-u", "slurm", "scontrol"]`). Times go to
Slurm and come back in UTC (TZ=UTC in the command's environment), to the second. Every name that
reaches a command line is checked against Slurm's own alphabet first; anything else raises
SlurmInputError before a process starts.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.conf import settings

# Slurm's names: reservations and nodes (hostnames), accounts (lower case, as sacctmgr stores them).
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
ACCOUNT_RE = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,63}$")
TIME_FORMAT = "%Y-%m-%dT%H:%M:%S"
# What a `-o show` answer may hold: longer lines or more of them are refused, not read.
MAX_LINE = 16_384
MAX_LINES = 20_000
MAX_NODES_PER_LIST = 10_000
MAX_ERROR = 300


class SlurmError(RuntimeError):
    """scontrol failed, timed out, could not start, or answered what Berth cannot read."""


class SlurmInputError(ValueError):
    """A name or account that may not reach Slurm's command line."""


def check_name(value: str, what: str = "name") -> str:
    """Return `value` if it is a valid Slurm reservation or node name, else raise SlurmInputError."""
    if not isinstance(value, str) or not NAME_RE.match(value):
        raise SlurmInputError(
            f"{what} {str(value)[:80]!r} is not a Slurm name (letters, digits, '_', '.', '-'; at most 64)"
        )
    return value


def check_account(value: str) -> str:
    """Return `value` if it is a valid Slurm account, else raise SlurmInputError."""
    if not isinstance(value, str) or not ACCOUNT_RE.match(value):
        raise SlurmInputError(
            f"account {str(value)[:80]!r} is not a Slurm account (lower-case letters, digits, '_', '.',"
            " '-'; at most 64)"
        )
    return value


def slurm_time(at: datetime) -> str:
    """Return a UTC instant as scontrol reads it (whole seconds, rounded down)."""
    return at.astimezone(UTC).strftime(TIME_FORMAT)


def slurm_end(at: datetime) -> str:
    """Return an end instant rounded up to the next whole second."""
    at = at.astimezone(UTC)
    if at.microsecond:
        at = at.replace(microsecond=0) + timedelta(seconds=1)
    return at.strftime(TIME_FORMAT)


def parse_time(value: str) -> datetime | None:
    """Return a Slurm time (UTC) as an aware datetime, or None for an unknown or unset one."""
    try:
        return datetime.strptime(value, TIME_FORMAT).replace(tzinfo=UTC)
    except ValueError:
        return None


def command() -> list[str]:
    """Return the scontrol command as the settings give it."""
    return list(settings.SLURM["SCONTROL"])


def _env() -> dict[str, str]:
    env = {**os.environ, "TZ": "UTC"}
    if settings.SLURM.get("CONF"):
        env["SLURM_CONF"] = settings.SLURM["CONF"]
    return env


def run(*args: str) -> str:
    """Run scontrol with `args`; return its output or raise SlurmError with what it said."""
    argv = [*command(), *args]
    try:
        done = subprocess.run(
            argv, capture_output=True, text=True, env=_env(), timeout=settings.SLURM["TIMEOUT"], check=False
        )
    except subprocess.TimeoutExpired as err:
        raise SlurmError(f"scontrol {args[0]} timed out after {err.timeout:g} s") from err
    except OSError as err:
        raise SlurmError(f"scontrol could not start: {err}") from err
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip().replace("\n", " ")[:MAX_ERROR]
        raise SlurmError(f"scontrol {' '.join(args[:2])} failed: {said or f'exit {done.returncode}'}")
    return done.stdout


def records(text: str) -> list[dict[str, str]]:
    """Return each line of a `scontrol -o show` answer as Key=Value pairs.

    A word without '=' belongs to the value before it (a node's Reason has spaces). Lines longer
    than MAX_LINE, or more than MAX_LINES of them, raise SlurmError: Berth reads bounded input.
    """
    lines = text.splitlines()
    if len(lines) > MAX_LINES:
        raise SlurmError(f"scontrol answered {len(lines)} lines (at most {MAX_LINES} are read)")
    found = []
    for line in lines:
        if not line.strip() or line.startswith("No reservations"):
            continue
        if len(line) > MAX_LINE:
            raise SlurmError(f"scontrol answered a line of {len(line)} characters (at most {MAX_LINE})")
        pairs: dict[str, str] = {}
        key = None
        for word in line.split():
            name, sep, value = word.partition("=")
            if sep and name.isidentifier():
                key = name
                pairs[key] = value
            elif key is not None:
                pairs[key] += " " + word
        found.append(pairs)
    return found


def expand_hostlist(text: str) -> tuple[str, ...]:
    """Return the node names of a Slurm hostlist (`gpu[01-03,07],login1`), at most MAX_NODES_PER_LIST."""
    if text in ("", "(null)"):
        return ()
    names: list[str] = []
    for part in _top_level(text):
        names.extend(_expand_one(part))
        if len(names) > MAX_NODES_PER_LIST:
            raise SlurmError(f"a node list names more than {MAX_NODES_PER_LIST} nodes")
    return tuple(names)


def _top_level(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch == "["
        depth -= ch == "]"
        if ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p for p in parts if p]


def _expand_one(part: str) -> list[str]:
    match = re.match(r"^([^\[]*)\[([^\]]*)\](.*)$", part)
    if not match:
        return [part]
    head, ranges, tail = match.groups()
    out = []
    for piece in ranges.split(","):
        low, _, high = piece.partition("-")
        if not low.isdigit() or (high and not high.isdigit()):
            raise SlurmError(f"cannot read the node list {part[:80]!r}")
        for n in range(int(low), int(high or low) + 1):
            if len(out) > MAX_NODES_PER_LIST:
                raise SlurmError(f"a node list names more than {MAX_NODES_PER_LIST} nodes")
            out.extend(_expand_one(f"{head}{n:0{len(low)}d}{tail}"))
    return out


@dataclass(frozen=True)
class SlurmReservation:
    """One reservation as `scontrol -o show reservation` gives it."""

    name: str
    start: datetime | None
    end: datetime | None
    nodes: tuple[str, ...]
    flags: frozenset[str]
    accounts: tuple[str, ...]
    users: tuple[str, ...]
    state: str


@dataclass(frozen=True)
class SlurmNode:
    """One node as `scontrol -o show node` gives it: its name, state words and reason."""

    name: str
    state: frozenset[str]
    reason: str

    @property
    def down(self) -> bool:
        return "DOWN" in self.state or "FAIL" in self.state

    @property
    def drained(self) -> bool:
        return "DRAIN" in self.state


def _list(value: str) -> tuple[str, ...]:
    return () if value in ("", "(null)") else tuple(v for v in value.split(",") if v)


def reservations() -> list[SlurmReservation]:
    """Return every reservation Slurm holds."""
    found = []
    for r in records(run("-o", "show", "reservation")):
        if "ReservationName" not in r:
            raise SlurmError("scontrol show reservation answered a line without ReservationName")
        found.append(
            SlurmReservation(
                name=r["ReservationName"][:200],
                start=parse_time(r.get("StartTime", "")),
                end=parse_time(r.get("EndTime", "")),
                nodes=expand_hostlist(r.get("Nodes", "")),
                flags=frozenset(_list(r.get("Flags", ""))),
                accounts=_list(r.get("Accounts", "")),
                users=_list(r.get("Users", "")),
                state=r.get("State", "")[:20],
            )
        )
    return found


def nodes() -> list[SlurmNode]:
    """Return every node Slurm knows, with its state words (IDLE, DOWN, DRAIN, NOT_RESPONDING, ...)."""
    found = []
    for r in records(run("-o", "show", "node")):
        if "NodeName" not in r:
            raise SlurmError("scontrol show node answered a line without NodeName")
        words = re.split(r"[+*~#!%$@^-]+", r.get("State", "").upper())
        reason = r.get("Reason", "")
        found.append(SlurmNode(r["NodeName"][:200], frozenset(w for w in words if w), reason[:200]))
    return found


def create(
    name: str, nodes: tuple[str, ...], start: datetime, end: datetime, *, accounts=(), users=(), flags=()
) -> None:
    """Create a reservation on exactly `nodes` for [start, end)."""
    args = [
        "create",
        "reservation",
        f"ReservationName={check_name(name, 'reservation')}",
        f"Nodes={','.join(check_name(n, 'node') for n in nodes)}",
        f"StartTime={slurm_time(start)}",
        f"EndTime={slurm_end(end)}",
    ]
    if accounts:
        args.append(f"Accounts={','.join(check_account(a) for a in accounts)}")
    if users:
        args.append(f"Users={','.join(check_name(u, 'user') for u in users)}")
    if flags:
        args.append(f"Flags={','.join(check_name(f, 'flag') for f in flags)}")
    run(*args)


def update(name: str, **fields: str) -> None:
    """Update a reservation's fields (already checked values: times, node lists, accounts)."""
    run(
        "update",
        f"ReservationName={check_name(name, 'reservation')}",
        *(f"{k}={v}" for k, v in fields.items()),
    )


def delete(name: str) -> None:
    """Delete a reservation."""
    run("delete", f"ReservationName={check_name(name, 'reservation')}")
