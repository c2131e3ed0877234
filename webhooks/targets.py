"""Where webhooks may go, and sending one there: http(s) only, public addresses, no redirects.

The address is resolved when a URL is subscribed and again at every delivery, and the connection
goes to the address that was checked, so DNS cannot swap in a private one between the check and
the connection. BERTH_WEBHOOKS_ALLOW_PRIVATE=1 lets loopback and private targets through (tests
run a receiver on 127.0.0.1).
"""

from __future__ import annotations

import http.client
import ipaddress
import os
import socket
import ssl
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

TIMEOUT = 5.0  # seconds for the whole answer's start; a slow receiver is a failed attempt
ANSWER_KEPT = 1024  # characters of an answer kept in the delivery log
METADATA = {ipaddress.ip_address("169.254.169.254"), ipaddress.ip_address("fd00:ec2::254")}


class TargetError(ValueError):
    """A URL Berth will not send to, and why."""


@dataclass(frozen=True)
class Answer:
    """What a receiver said: its status code and first kilobyte, or why there was no answer."""

    status: int | None
    text: str
    error: str
    duration_ms: int

    @property
    def ok(self) -> bool:
        return self.status is not None and 200 <= self.status < 300


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


def resolve(host: str, port: int) -> str:
    """Return an address of `host` that webhooks may reach; raise TargetError when none may be."""
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise TargetError(f"url: {host} does not resolve ({exc})") from None
    addresses = [info[4][0] for info in found]
    if not addresses:
        raise TargetError(f"url: {host} does not resolve")
    if not allow_private():
        for address in addresses:
            ip = ipaddress.ip_address(address.split("%", 1)[0])
            if ip in METADATA or ip.is_loopback or ip.is_private or ip.is_link_local or ip.is_reserved:
                raise TargetError(
                    f"url: {host} is {address}, a loopback, private, link-local or metadata address"
                )
            if ip.is_multicast or ip.is_unspecified:
                raise TargetError(f"url: {host} is {address}, not a host")
    return addresses[0]


def post(url: str, body: bytes, headers: dict[str, str], timeout: float = TIMEOUT) -> Answer:
    """POST `body` to `url` at the address just checked; never follow a redirect, never raise."""
    started = time.monotonic()

    def took() -> int:
        return round((time.monotonic() - started) * 1000)

    try:
        scheme, host, port, path = check_url(url)
        address = resolve(host, port)
    except TargetError as exc:
        return Answer(None, "", str(exc), took())
    if scheme == "https":
        conn: http.client.HTTPConnection = http.client.HTTPSConnection(
            host, port, timeout=timeout, context=ssl.create_default_context()
        )
    else:
        conn = http.client.HTTPConnection(host, port, timeout=timeout)
    # Connect to the checked address; TLS still verifies the certificate for the host name.
    conn._create_connection = lambda _addr, t=None, source=None: socket.create_connection(  # type: ignore[attr-defined]
        (address, port), timeout=timeout, source_address=source
    )
    try:
        conn.request("POST", path, body=body, headers={**headers, "Content-Type": "application/json"})
        answer = conn.getresponse()
        text = answer.read(ANSWER_KEPT * 4).decode("utf-8", "replace")[:ANSWER_KEPT]
        return Answer(answer.status, text, "", took())
    except (OSError, http.client.HTTPException, ssl.SSLError) as exc:
        return Answer(None, "", f"{type(exc).__name__}: {exc}"[:ANSWER_KEPT], took())
    finally:
        conn.close()
