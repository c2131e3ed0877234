"""DATABASE_URL, libpq's multi-host form included, and a check that its hosts answer.

`postgresql://user@db1:5432,db2:5432/berth` lists a primary and its standbys: libpq tries them in
order and, with `target_session_attrs=read-write` (the default here when several hosts are given),
keeps the first that takes writes, so after a failover every new connection finds the promoted
server by itself. dj-database-url refuses the form, so the host list is taken out before it
parses and handed to Django as libpq wants it (HOST "db1,db2", PORT "5432,5432").
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

import dj_database_url

DEFAULT_PORT = "5432"
# libpq waits forever for a host that does not answer; five seconds a host, then the next one.
CONNECT_TIMEOUT = 5
# A primary that vanishes without closing its sockets (a machine gone, a network cut) is noticed
# after about 10 + 3 × 5 = 25 s of silence instead of the kernel's two hours.
KEEPALIVES = {"keepalives": 1, "keepalives_idle": 10, "keepalives_interval": 5, "keepalives_count": 3}


class BadURL(ValueError):
    """The URL's host list cannot be read."""


def parse(
    url: str,
    *,
    target_session_attrs: str = "read-write",
    connect_timeout: int = CONNECT_TIMEOUT,
    **kwargs,
) -> dict:
    """Return Django's DATABASES entry for `url` (one host or several).

    `target_session_attrs` is what several hosts default to (read-write: the primary; a replica's
    URL asks for prefer-standby); the URL's own query string wins over both defaults.
    """
    try:
        parts = urlsplit(url)
    except ValueError as err:  # an unclosed "[" of an IPv6 host
        raise BadURL(f"DATABASE_URL: cannot read the host list ({err})") from None
    userinfo, at, hostlist = parts.netloc.rpartition("@")
    if "," not in hostlist:
        config = dj_database_url.parse(url, **kwargs)
    else:
        pairs = [_host_port(item) for item in hostlist.split(",")]
        first = pairs[0][0]
        first = f"[{first}]" if ":" in first else first
        config = dj_database_url.parse(urlunsplit(parts._replace(netloc=f"{userinfo}{at}{first}")), **kwargs)
        config["HOST"] = ",".join(host for host, _ in pairs)
        config["PORT"] = ",".join(port for _, port in pairs)
        config.setdefault("OPTIONS", {}).setdefault("target_session_attrs", target_session_attrs)
    options = config.setdefault("OPTIONS", {})
    options.setdefault("connect_timeout", connect_timeout)
    for key, value in KEEPALIVES.items():
        options.setdefault(key, value)
    return config


def _host_port(item: str) -> tuple[str, str]:
    """Split `host`, `host:port`, `[v6]` or `[v6]:port`."""
    if item.startswith("["):
        host, bracket, rest = item[1:].partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            raise BadURL(f"DATABASE_URL: cannot read the host {item!r}")
        port = rest[1:]
    else:
        host, _, port = item.partition(":")
    if not host or (port and not port.isdigit()):
        raise BadURL(f"DATABASE_URL: cannot read the host {item!r}")
    return host, port or DEFAULT_PORT


def hosts(config: dict) -> list[tuple[str, str]]:
    """Return the (host, port) pairs a DATABASES entry lists, in libpq's order."""
    options = config.get("OPTIONS", {})
    names = str(config.get("HOST") or options.get("host") or "localhost").split(",")
    ports = str(config.get("PORT") or options.get("port") or DEFAULT_PORT).split(",")
    if len(ports) == 1:
        ports = ports * len(names)
    return list(zip(names, ports, strict=False))


@dataclass(frozen=True)
class HostState:
    """What one host answered: `primary`, `standby`, or `down` with libpq's reason."""

    host: str
    port: str
    role: str
    reason: str = ""

    @property
    def name(self) -> str:
        return f"{self.host}:{self.port}"


def probe(config: dict, timeout: int = 3) -> list[HostState]:
    """Connect to each host on its own and say what it is."""
    import psycopg

    states = []
    for host, port in hosts(config):
        params = {
            "dbname": config.get("NAME") or "postgres",
            "user": config.get("USER") or None,
            "password": config.get("PASSWORD") or None,
            "host": host,
            "port": port,
            "connect_timeout": timeout,
        }
        for key in ("sslmode", "sslrootcert", "sslcert", "sslkey", "passfile"):
            if key in config.get("OPTIONS", {}):
                params[key] = config["OPTIONS"][key]
        try:
            with psycopg.connect(**{k: v for k, v in params.items() if v is not None}) as conn:
                standby = conn.execute("SELECT pg_is_in_recovery()").fetchone()[0]
            states.append(HostState(host, port, "standby" if standby else "primary"))
        except psycopg.Error as err:
            reason = _reason(str(err)) or type(err).__name__
            states.append(HostState(host, port, "down", reason))
    return states


def _reason(text: str) -> str:
    """Keep libpq's reason ("Connection refused"), not its whole paragraph."""
    for line in text.splitlines():
        if "failed:" in line:
            return line.rsplit("failed:", 1)[1].strip()
    return text.strip().splitlines()[0] if text.strip() else ""


def describe(states: list[HostState]) -> str:
    """Name each host that does not answer, with its reason; say when none takes writes."""
    down = [f"{s.name} does not answer ({s.reason})" for s in states if s.role == "down"]
    if not any(s.role == "primary" for s in states):
        standbys = [f"{s.name} is a standby" for s in states if s.role == "standby"]
        return "DATABASE_URL: no host takes writes: " + "; ".join(down + standbys)
    if down:
        return "DATABASE_URL: " + "; ".join(down)
    return ""
