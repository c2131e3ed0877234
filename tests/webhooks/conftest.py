"""Webhook fixtures: a receiver on 127.0.0.1 that records what it is sent, users, and booking.

lab: node-a and node-b, 4 GPUs each (NVLink), in lab-pool; acme and globex are tenants.
"""

from __future__ import annotations

import dataclasses
import http.server
import json
import socket
import threading
import time
from dataclasses import dataclass, field

import pytest


@dataclass
class Received:
    """One request the receiver got."""

    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> dict:
        return json.loads(self.body)


@dataclass
class Receiver:
    """A webhook receiver: answers the next of `statuses` (then 200) and keeps every request."""

    url: str
    got: list[Received] = field(default_factory=list)
    statuses: list[int] = field(default_factory=list)
    answer: bytes = b"ok"
    arrived: list[float] = field(default_factory=list)  # time.monotonic() of each request

    def types(self) -> list[str]:
        return [r.json["type"] for r in self.got]


@pytest.fixture
def receiver(monkeypatch):
    monkeypatch.setenv("BERTH_WEBHOOKS_ALLOW_PRIVATE", "1")
    state = Receiver("")

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            state.arrived.append(time.monotonic())
            state.got.append(Received({k.lower(): v for k, v in self.headers.items()}, body))
            code = state.statuses.pop(0) if state.statuses else 200
            self.send_response(code)
            self.send_header("Content-Length", str(len(state.answer)))
            self.end_headers()
            self.wfile.write(state.answer)

        def log_message(self, *args):
            pass

    class Server(http.server.ThreadingHTTPServer):
        request_queue_size = 128  # 5 by default: eight senders at once would overflow it

    server = Server(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}/hooks"
    yield state
    server.shutdown()
    server.server_close()


@dataclass
class Dribbler:
    """A receiver that answers `HTTP/1.1 200 OK`, then one header line every `every` seconds."""

    url: str
    every: float
    requests: list[float] = field(default_factory=list)  # time.monotonic() of each request
    closed: list[float] = field(default_factory=list)  # when Berth hung up on each


@pytest.fixture
def dribbler(monkeypatch):
    """Start a dribbling receiver on 127.0.0.1; each connection dribbles for at most 60 s."""
    monkeypatch.setenv("BERTH_WEBHOOKS_ALLOW_PRIVATE", "1")
    listener = socket.create_server(("127.0.0.1", 0), backlog=64)
    state = Dribbler(f"http://127.0.0.1:{listener.getsockname()[1]}/slow", every=0.5)
    stop = threading.Event()

    def dribble(conn: socket.socket) -> None:
        with conn:
            conn.settimeout(5)
            seen = b""
            while b"\r\n\r\n" not in seen and len(seen) < 65536:
                chunk = conn.recv(4096)
                if not chunk:
                    return
                seen += chunk
            state.requests.append(time.monotonic())
            try:
                conn.sendall(b"HTTP/1.1 200 OK\r\n")
                for line in range(int(60 / state.every)):  # bounded: a minute at most
                    if stop.wait(state.every):
                        return
                    conn.sendall(f"X-Slow-{line}: still thinking\r\n".encode())
            except OSError:
                state.closed.append(time.monotonic())

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=dribble, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    yield state
    stop.set()
    listener.close()


@pytest.fixture
def lab(two_labelled_hosts, tenant, other_tenant):
    return two_labelled_hosts


@pytest.fixture
def people(db, tenant, other_tenant):
    """Return alice (acme), bob (globex) and ops (an operator)."""
    from django.contrib.auth.models import Group, User

    alice = User.objects.create_user("alice")
    tenant.users.add(alice)
    bob = User.objects.create_user("bob")
    other_tenant.users.add(bob)
    ops = User.objects.create_user("ops")
    ops.groups.add(Group.objects.get_or_create(name="operators")[0])
    return alice, bob, ops


@pytest.fixture
def book():
    """Book through the services, starting now unless told, without the random top-N pick."""
    from capacity import services
    from capacity.conf import placer_config

    config = dataclasses.replace(placer_config(), random=None)

    def reserve(tenant="acme", gpus=1, **extra):
        data = {"tenantId": tenant, "poolId": "lab-pool", "devices": [{"class": "gpu", "count": gpus}]}
        data.setdefault("duration", "1d") if "during" not in extra else None
        return services.reserve({**data, **extra}, config=config).reservation

    return reserve
