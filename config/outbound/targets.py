"""Where webhooks may go, and sending one there: http(s) only, public addresses, no redirects.

The address is resolved when a URL is subscribed and again at every delivery, and the connection
goes to the address that was checked, so DNS cannot swap in a private one between the check and
the connection (addresses.py says which are refused). An attempt has one wall-clock DEADLINE for
the name lookup, connect, TLS, request, headers and body together: a receiver that dribbles its
answer a byte at a time is cut off at the deadline, not after every read's own timeout. It reads
at most ANSWER_READ bytes of the body (headers: http.client's bound, 100 lines of 64 KiB).
"""

from __future__ import annotations

import contextlib
import heapq
import http.client
import itertools
import os
import socket
import ssl
import threading
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

from .addresses import SETTING, is_literal, refusal

DEADLINE = 10.0  # seconds for a whole attempt; past it the attempt failed and is tried again later
ANSWER_READ = 4096  # bytes of an answer's body read at most
ANSWER_KEPT = 200  # printable characters of an answer (or an error) kept and shown to the owner


class TargetError(ValueError):
    """A URL Berth will not send to, and why."""


@dataclass(frozen=True)
class Answer:
    """What a receiver said: its status code and the start of its body, or why there was no answer."""

    status: int | None
    text: str
    error: str
    duration_ms: int
    cut: bool = False  # cut short because the worker is stopping, not by the receiver
    longer: bool = False  # the body went on past ANSWER_READ bytes (read `whole`)

    @property
    def ok(self) -> bool:
        return self.status is not None and 200 <= self.status < 300


def printable(text: str, limit: int = ANSWER_KEPT) -> str:
    """Return `text` as at most `limit` printable characters (control characters become spaces)."""
    return " ".join("".join(c if c.isprintable() else " " for c in text[: limit * 4]).split())[
        :limit
    ].rstrip()


def allow_private() -> bool:
    return os.environ.get("BERTH_WEBHOOKS_ALLOW_PRIVATE") == "1"


def check_url(url: str) -> tuple[str, str, int, str]:
    """Return (scheme, host, port, path) of a URL webhooks may use; raise TargetError naming why not."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise TargetError("url: only http and https URLs")
    if not parts.hostname:
        raise TargetError("url: no host")
    if parts.username or parts.password:
        raise TargetError("url: no user name or password in the URL (sign with the secret instead)")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise TargetError("url: the port is not a number from 1 to 65535") from None
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return parts.scheme, parts.hostname, port, path


def _lookup(host: str, port: int, timeout: float) -> list[str]:
    """Return the addresses of `host`, waiting at most `timeout` seconds for the resolver."""
    if is_literal(host):
        return [host]
    found: list = []

    def ask() -> None:
        try:
            found.append(socket.getaddrinfo(host, port, type=socket.SOCK_STREAM))
        except (OSError, UnicodeError) as exc:
            found.append(exc)

    # getaddrinfo takes no timeout: a stuck resolver holds only this helper thread.
    helper = threading.Thread(target=ask, daemon=True, name="webhook-dns")
    helper.start()
    helper.join(timeout)
    if not found:
        raise TargetError(f"url: {host} did not resolve within {timeout:g} s")
    if isinstance(found[0], Exception):
        raise TargetError(f"url: {host} does not resolve ({found[0]})")
    return [info[4][0] for info in found[0]]


def resolve(host: str, port: int, timeout: float = DEADLINE) -> str:
    """Return an address of `host` that webhooks may reach; raise TargetError when one may not be."""
    addresses = _lookup(host, port, timeout)
    if not addresses:
        raise TargetError(f"url: {host} does not resolve")
    private = allow_private()
    for address in addresses:
        said = refusal(address, allow_private=private)
        if said is not None:
            where = f"{host} is" if host == address else f"{host} is {address},"
            raise TargetError(f"url: {where} {said}")
    return addresses[0]


class Attempts:
    """The attempts in flight of one sender pool, so that a stopping worker can cut them all."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._live: set[_Cutter] = set()
        self.stopping = False

    def add(self, cutter: _Cutter) -> None:
        with self._lock:
            self._live.add(cutter)
            stopping = self.stopping
        if stopping:
            cutter.cut(stopping=True)

    def discard(self, cutter: _Cutter) -> None:
        with self._lock:
            self._live.discard(cutter)

    def cut_all(self) -> None:
        """Cut every attempt in flight and every one that starts from now on."""
        with self._lock:
            self.stopping = True
            live = list(self._live)
        for cutter in live:
            cutter.cut(stopping=True)


class _Cutter:
    """Shuts an attempt's socket down at its deadline (or when the worker stops)."""

    def __init__(self) -> None:
        self.socket: socket.socket | None = None  # a duplicate: TLS wrapping detaches the original
        self.fired = self.stopping = self.done = False
        self._lock = threading.Lock()

    def hold(self, sock: socket.socket) -> None:
        with self._lock:
            self.socket = sock.dup()
            fired = self.fired
        if fired:
            self._shut()

    def cut(self, stopping: bool = False) -> None:
        with self._lock:
            self.fired, self.stopping = True, self.stopping or stopping
        self._shut()

    def _shut(self) -> None:
        with self._lock:
            sock = self.socket
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)  # wakes the blocked read at once, TLS or not

    def close(self) -> None:
        with self._lock:
            sock, self.socket = self.socket, None
        if sock is not None:
            sock.close()


class _Watchdog:
    """One thread that cuts every attempt still running at its deadline (a timer thread each cost more)."""

    def __init__(self) -> None:
        self._wake = threading.Condition()
        self._due: list[tuple[float, int, _Cutter]] = []
        self._thread: threading.Thread | None = None
        self._order = itertools.count()  # ties on the deadline never compare two cutters

    def watch(self, deadline: float, cutter: _Cutter) -> None:
        """Cut `cutter` at `deadline` (time.monotonic) unless it is done by then."""
        with self._wake:
            heapq.heappush(self._due, (deadline, next(self._order), cutter))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, daemon=True, name="webhook-deadlines")
                self._thread.start()
            if self._due[0][2] is cutter:
                self._wake.notify()

    def _run(self) -> None:
        with self._wake:
            while True:  # a daemon: it lives as long as the process and sleeps while nothing is due
                now = time.monotonic()
                while self._due and self._due[0][0] <= now:
                    _at, _key, cutter = heapq.heappop(self._due)
                    if not cutter.done:
                        cutter.cut()
                self._wake.wait(self._due[0][0] - now if self._due else None)


WATCHDOG = _Watchdog()


def post(
    url: str,
    body: bytes,
    headers: dict[str, str],
    deadline: float = DEADLINE,
    attempts: Attempts | None = None,
    whole: bool = False,
) -> Answer:
    """POST `body` to `url` at the address just checked, within `deadline`; never follow a redirect,
    never raise.

    The answer's text is its first ANSWER_KEPT printable characters, or with `whole` its first
    ANSWER_READ bytes as sent (for a caller that parses it), `longer` when it went on.
    """
    started = time.monotonic()

    def took() -> int:
        return round((time.monotonic() - started) * 1000)

    def left() -> float:
        return max(0.001, deadline - (time.monotonic() - started))

    try:
        scheme, host, port, path = check_url(url)
        address = resolve(host, port, timeout=deadline)
    except TargetError as exc:
        return Answer(None, "", printable(str(exc), 1000), took())
    cutter = _Cutter()

    def connect(_addr, _timeout=None, source=None) -> socket.socket:
        # Connect to the checked address; TLS still verifies the certificate for the host name.
        sock = socket.create_connection((address, port), timeout=left(), source_address=source)
        cutter.hold(sock)
        return sock

    if scheme == "https":
        conn: http.client.HTTPConnection = http.client.HTTPSConnection(
            host, port, timeout=deadline, context=ssl.create_default_context()
        )
    else:
        conn = http.client.HTTPConnection(host, port, timeout=deadline)
    conn._create_connection = connect  # type: ignore[attr-defined]
    WATCHDOG.watch(started + deadline, cutter)
    if attempts is not None:
        attempts.add(cutter)
    try:
        conn.request("POST", path, body=body, headers={**headers, "Content-Type": "application/json"})
        answer = conn.getresponse()
        raw = answer.read(ANSWER_READ + 1 if whole else ANSWER_READ)
        if cutter.fired:
            raise TimeoutError
        if whole:
            text = raw[:ANSWER_READ].decode("utf-8", "replace")
            return Answer(answer.status, text, "", took(), longer=len(raw) > ANSWER_READ)
        return Answer(answer.status, printable(raw.decode("utf-8", "replace")), "", took())
    except (OSError, http.client.HTTPException, ssl.SSLError, ValueError) as exc:
        if cutter.stopping:
            return Answer(None, "", "the worker stopped mid-send", took(), cut=True)
        if cutter.fired:
            return Answer(None, "", f"no whole answer within the {deadline:g} s deadline", took())
        return Answer(None, "", printable(f"{type(exc).__name__}: {exc}"), took())
    finally:
        cutter.done = True
        if attempts is not None:
            attempts.discard(cutter)
        conn.close()
        cutter.close()


__all__ = ["ANSWER_KEPT", "DEADLINE", "SETTING", "Answer", "Attempts", "TargetError", "post", "resolve"]
