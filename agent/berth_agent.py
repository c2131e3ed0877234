#!/usr/bin/env python3
"""Berth's node agent: report this node's GPUs to Berth and write down who holds which GPU now.

One file, standard library only, Python 3.9 or newer: it runs under a GPU node's own python3,
without Django. Every INTERVAL seconds it posts what `nvidia-smi -q -x`, `-L` and `topo -m` print,
whose the GPUs' processes are and the images cached on the node to `POST /api/v1/nodes/NODE/report`.
Meanwhile it long-polls `GET /api/v1/nodes/NODE/assignments?wait=...` and writes, each file whole
(written in OUTPUT/.tmp and renamed into place):

  OUTPUT/assignments.json         the feed as Berth answered it
  OUTPUT/reservations/ID.env      per reservation holding a device now: CUDA_VISIBLE_DEVICES and
                                  NVIDIA_VISIBLE_DEVICES (GPU UUIDs, MIG slices by MIG UUID)
  OUTPUT/reservations/ID.idle     while Berth marks it Idle: JSON with since, the evidence,
                                  keepWhenIdle and releaseAt (null: not released for it)
  OUTPUT/reservations/ID.preempt  while that spot reservation has notice: JSON with preemptAt
  OUTPUT/reservations/ID.maintenance  while a window will take its GPUs: JSON with windowId, start...

A GPU process is a reservation's when its environment's BERTH_RESERVATION_ID names one the agent
wrote an env file for; any other is left out. Not root, or to a Berth that refuses processOwners
(older), it sends none. When Berth cannot be reached it keeps the last files, logs it and retries
with a capped backoff; a bad answer is logged and never ends the agent. See docs/agent.md.
"""

from __future__ import annotations

import argparse
import configparser
import contextlib
import http.client
import json
import logging
import os
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ElementTree
from typing import Any

VERSION = "1.4"
LOG = logging.getLogger("berth-agent")
SMI_TIMEOUT = 30.0  # seconds: a hung driver must not stall the agent for good
HTTP_TIMEOUT = 20.0  # seconds for a report; a long-poll adds its wait
MAX_ANSWER_BYTES = 4 * 1024 * 1024  # an assignments answer larger than this is a bad answer
MAX_IMAGES = 512  # Berth's cap on one report's images
BACKOFF_FIRST, BACKOFF_MOST = 1.0, 60.0
STOP_GRACE = 1.5  # seconds a stopping agent waits for a write under way (systemd waits 90)
SMI_COMMANDS = (("query", ("-q", "-x")), ("list", ("-L",)), ("topo", ("topo", "-m")))
OWNER_VARIABLE = b"BERTH_RESERVATION_ID="  # what each reservations/ID.env hands its jobs
MAX_OWNED = 4096  # Berth's cap on one report's processOwners
MAX_ENVIRON_BYTES = 1024 * 1024  # a process environment larger than this is read no further
FILE_KINDS = ("env", "idle", "preempt", "maintenance")  # reservations/ID.KIND the agent writes and removes
UNREACHABLE = (OSError, http.client.HTTPException)  # refused, reset, timed out, cut short
DEFAULTS = {
    "url": "http://127.0.0.1:8000", "node": "", "token_file": "/etc/berth/agent.token", "interval": "30",
    "wait": "55", "nvidia_smi": "nvidia-smi", "output": "/run/berth", "images_command": "", "images_dir": "",
    "proc": "/proc",
}  # fmt: skip


class TokenError(Exception):
    """The node's token file cannot be read."""


class Settings:
    """What the agent was told, from its config file's [agent] section and then its flags."""

    def __init__(self, values: dict[str, str], replace: bool = False) -> None:
        self.url = _berth_url(values["url"])
        self.node = values["node"] or socket.gethostname().split(".")[0]
        self.interval = _positive(values["interval"], "interval")
        self.wait = min(60, int(_positive(values["wait"], "wait")))
        self.token_file, self.output = values["token_file"], values["output"]
        self.nvidia_smi, self.proc = values["nvidia_smi"], values["proc"]
        self.images_command, self.images_dir = values["images_command"], values["images_dir"]
        self.replace = replace
        self.attribute = True  # send processOwners (off once Berth refuses the field: an older Berth)


def _berth_url(text: str) -> str:
    # Without a scheme urllib cannot even try ("unknown url type"): say so once, at start.
    url = text.strip().rstrip("/")
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise SystemExit(
            f"berth-agent: url must be Berth's address with its scheme, e.g. https://berth.example.org "
            f"or http://127.0.0.1:8000, not {text!r}"
        )
    return url


def _positive(text: str, name: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise SystemExit(f"berth-agent: {name} must be a number of seconds, not {text!r}") from None
    if value <= 0:
        raise SystemExit(f"berth-agent: {name} must be more than 0 seconds")
    return value


def parse_args(argv: list[str] | None = None) -> tuple[Settings, argparse.Namespace]:
    parser = argparse.ArgumentParser(
        prog="berth_agent.py",
        description="Report this node's GPUs to Berth and write down which reservation holds each GPU now.",
        epilog="Flags override the config file's [agent] section (same names, with _ for -).",
    )
    for flag, text in (
        ("--config", "an INI file with an [agent] section (e.g. /etc/berth/agent.ini)"),
        ("--url", f"Berth's address (default {DEFAULTS['url']})"),
        ("--node", "this node's name in Berth (default: the short host name)"),
        ("--token-file", f"a file holding the node's token (default {DEFAULTS['token_file']})"),
        ("--interval", "seconds between reports (default 30)"),
        ("--wait", "seconds each long-poll of the assignments waits, at most 60 (default 55)"),
        ("--nvidia-smi", "the nvidia-smi program (default: nvidia-smi on PATH)"),
        ("--output", f"where assignments.json and reservations/ go (default {DEFAULTS['output']})"),
        ("--images-command", "a command printing the cached images, one per line"),
        ("--images-dir", "a directory whose entries name the cached images (instead)"),
        ("--proc", "where the processes' environments are read, PID/environ (default /proc)"),
    ):
        parser.add_argument(flag, help=text)
    parser.add_argument(
        "--once", action="store_true", help="report once, write the assignments once and exit"
    )
    parser.add_argument(
        "--replace",
        action="store_true",
        help='send "replace": true with the first report Berth takes: the GPUs it reports replace the '
        "node's stored ones (those left out are marked unhealthy), e.g. after swapping boards",
    )
    parser.add_argument("--verbose", action="store_true", help="log every report and answer")
    parser.add_argument("--version", action="version", version=f"berth-agent {VERSION}")
    args = parser.parse_args(argv)
    values = dict(DEFAULTS)
    if args.config:
        ini = configparser.ConfigParser()
        if not ini.read(args.config):
            parser.error(f"cannot read the config file {args.config}")
        if ini.has_section("agent"):
            for key, value in ini.items("agent"):
                if key not in DEFAULTS:
                    parser.error(f"{args.config}: unknown setting {key!r} in [agent]")
                values[key] = value
    given = {key: getattr(args, key) for key in DEFAULTS}
    values.update({key: value for key, value in given.items() if value is not None})  # flags win
    return Settings(values, replace=args.replace), args


class Berth:
    """Berth's API as the node's own credential sees it."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.base = f"{settings.url}/api/v1/nodes/{urllib.parse.quote(settings.node, safe='')}"
        self.retry_after = 0  # seconds the last assignments answer asked to wait before the next

    def token(self) -> str:
        try:
            with open(self.settings.token_file, encoding="utf-8") as f:
                token = f.read().strip()
        except OSError as exc:
            raise TokenError(f"cannot read the token file {self.settings.token_file}: {exc}") from None
        if not token or any(c.isspace() for c in token):
            raise TokenError(f"the token file {self.settings.token_file} does not hold one token")
        return token

    def _call(self, request: urllib.request.Request, timeout: float) -> tuple[int, Any, bytes]:
        request.add_header("Authorization", f"Token {self.token()}")
        request.add_header("Accept", "application/json")
        request.add_header("User-Agent", f"berth-agent/{VERSION}")
        try:
            with urllib.request.urlopen(request, timeout=timeout) as answer:
                return answer.status, answer.headers, answer.read(MAX_ANSWER_BYTES + 1)
        except urllib.error.HTTPError as exc:
            # 304 and 4xx/5xx land here: they are answers, not failures to reach Berth.
            return exc.code, exc.headers or {}, exc.read(MAX_ANSWER_BYTES + 1)

    def report(self, body: dict[str, Any]) -> tuple[int, dict[str, Any], bytes]:
        data = json.dumps(body).encode("utf-8")
        headers = {"Content-Type": "application/json"}
        request = urllib.request.Request(f"{self.base}/report", data=data, headers=headers, method="POST")
        status, _headers, raw = self._call(request, HTTP_TIMEOUT)
        return status, _json_object(raw), raw

    def assignments(self, etag: str | None, wait: int) -> tuple[int, str | None, bytes]:
        url = f"{self.base}/assignments" + (f"?wait={wait}" if wait else "")
        request = urllib.request.Request(url, headers={"If-None-Match": etag} if etag else {}, method="GET")
        status, headers, raw = self._call(request, HTTP_TIMEOUT + wait)
        # Berth answers at once with Retry-After when it holds all the waits it takes: ask again then.
        later = headers.get("Retry-After") or ""
        self.retry_after = min(int(later[:4]), 60) if later.isascii() and later.isdigit() else 0
        return status, headers.get("ETag"), raw


def _json_object(raw: bytes) -> dict[str, Any]:
    try:
        value = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def _glimpse(raw: bytes) -> str:
    """Return the start of an answer, printable, for a log line."""
    text = raw[:80].decode("utf-8", "replace")
    return "".join(c if c.isprintable() else " " for c in text) + ("…" if len(raw) > 80 else "")


def _run(command: Any, shell: bool = False) -> tuple[str | None, str]:
    """Return what the command printed, or None and what went wrong (bounded by SMI_TIMEOUT)."""
    try:
        done = subprocess.run(command, shell=shell, capture_output=True, timeout=SMI_TIMEOUT, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        return None, str(exc)
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        return None, f"exit {done.returncode}{': ' + said[-1] if said else ''}"
    return done.stdout.decode("utf-8", "replace"), ""


def read_nvidia_smi(program: str) -> dict[str, str]:
    """Return what each nvidia-smi command printed; log what went wrong with the others."""
    texts: dict[str, str] = {}
    for key, args in SMI_COMMANDS:
        command = [*shlex.split(program), *args]
        printed, problem = _run(command)
        if printed is None:
            LOG.warning("%s: %s", " ".join(command), problem)
        else:
            texts[key] = printed
    return texts


def read_images(settings: Settings) -> list[str] | None:
    """Return the images cached on the node (None when no source is set or it fails)."""
    if settings.images_command:
        printed, problem = _run(settings.images_command, shell=True)
        if printed is None:
            LOG.warning("images command failed (%s); the cache is not reported", problem)
            return None
        names = printed.split()
    elif settings.images_dir:
        try:
            names = sorted(e for e in os.listdir(settings.images_dir) if not e.startswith("."))
        except OSError as exc:
            LOG.warning("images directory unreadable: %s", exc)
            return None
    else:
        return None
    unique = list(dict.fromkeys(n for n in names if n and "<none>" not in n))
    if len(unique) > MAX_IMAGES:
        LOG.warning("%s images cached; reporting the first %s (Berth's cap)", len(unique), MAX_IMAGES)
    return unique[:MAX_IMAGES]


def gpu_pids(query: str) -> list[int]:
    """Return the ids of the processes `nvidia-smi -q -x` lists on any GPU (none if it does not parse)."""
    try:
        root = ElementTree.fromstring(query)
    except ElementTree.ParseError:
        return []
    texts = ((info.findtext("pid") or "").strip() for info in root.iter("process_info"))
    return sorted({int(text) for text in texts if text.isdigit() and len(text) <= 10})[:MAX_OWNED]


def process_owners(pids: list[int], proc: str, known: set[str]) -> list[dict[str, Any]] | None:
    """Return whose these processes are, [{"pid", "reservationId"}], from BERTH_RESERVATION_ID in each
    one's environment, naming only `known` reservations; one gone or naming none is left out.
    Return None when an environment may not be read (the agent is not root): nothing is attributed."""
    owners = []
    for pid in pids:
        try:
            with open(os.path.join(proc, str(pid), "environ"), "rb") as f:
                environ = f.read(MAX_ENVIRON_BYTES)
        except PermissionError:
            return None
        except OSError:
            continue  # gone since nvidia-smi looked, or not a process
        for item in environ.split(b"\0"):
            if item.startswith(OWNER_VARIABLE):
                rid = item[len(OWNER_VARIABLE) :].decode("utf-8", "replace")
                if rid in known:
                    owners.append({"pid": pid, "reservationId": int(rid) if rid.isdigit() else rid})
                break
    return owners


def known_reservations(output: str) -> set[str]:
    """Return the reservations the agent wrote an env file for: the ones its jobs can name."""
    try:
        names = os.listdir(os.path.join(output, "reservations"))
    except OSError:
        return set()
    return {name[: -len(".env")] for name in names if name.endswith(".env")}


def build_report(settings: Settings) -> dict[str, Any]:
    """Return the report body: nvidia-smi's texts that ran, whose the GPUs' processes are, the images."""
    texts = read_nvidia_smi(settings.nvidia_smi)
    body: dict[str, Any] = {}
    # Without -q -x or -L Berth cannot tell which GPUs are here; sending only a topology would
    # still be read, but GPUs are never dropped on a failed nvidia-smi: they are left as they were.
    if "query" in texts or "list" in texts:
        body["nvidiaSmi"] = texts
    if "query" in texts and settings.attribute:
        owners = process_owners(gpu_pids(texts["query"]), settings.proc, known_reservations(settings.output))
        if owners is None:
            said = "(run the agent as root): the report does not say whose they are"
            LOG.warning("cannot read the GPU processes' environments under %s %s", settings.proc, said)
        else:
            body["processOwners"] = owners
    images = read_images(settings)
    if images is not None:
        body["images"] = images
    if settings.replace and "nvidiaSmi" in body:
        body["replace"] = True
    return body


def held_devices(feed: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Return, per reservation holding a device now, its devices' UUIDs and what the feed says of it.

    A MIG slice is listed by its own UUID, unless its GPU is held by the same reservation whole.
    Spot work lent an idle owner's GPUs (a device's `lent`) holds them too, beside their owner.
    Raise ValueError when the feed does not have the documented shape.
    """
    devices = feed.get("devices")
    if not isinstance(devices, list):
        raise ValueError("the answer has no devices list")
    if not all(isinstance(device, dict) and isinstance(device.get("uuid"), str) for device in devices):
        raise ValueError("a device without a uuid")
    held: dict[str, dict[str, Any]] = {}
    for key in ("now", "lent"):
        holder: dict[str, str] = {}
        mine: dict[str, dict[str, Any]] = {}
        for device in devices:
            now = device.get(key)
            if now is None:
                continue
            # A reservation's id, or the instance id of a booking made through Berth's capacity port.
            ids = (now.get(k) for k in ("reservationId", "instanceId")) if isinstance(now, dict) else ()
            owner = next((i for i in ids if i is not None), None)
            if isinstance(owner, bool) or not isinstance(owner, (int, str)):
                raise ValueError(f"device {device['uuid']}: {key} names no reservationId")
            rid = str(owner)
            # It names files: a plain name only (no path, no hidden file).
            if not rid or len(rid) > 200 or rid[0] == "." or not all(c.isalnum() or c in "-_." for c in rid):
                raise ValueError(f"device {device['uuid']}: reservation id {rid!r} is not a plain name")
            holder[device["uuid"]] = rid
            entry = mine.setdefault(rid, {"now": now, "uuids": []})
            entry["uuids"].append((device["uuid"], device.get("parent")))
        for rid, entry in mine.items():
            pairs = entry["uuids"]  # a slice of a GPU the same reservation holds whole is left out
            entry["uuids"] = [
                u for u, parent in pairs if parent is None or holder.get(parent) != holder.get(u)
            ]
            held.setdefault(rid, entry)
    return held


def reservation_files(rid: str, entry: dict[str, Any], node: str) -> dict[str, str]:
    """Return a reservation's files by kind: env; idle, preempt and maintenance while they apply."""
    now, uuids = entry["now"], ",".join(entry["uuids"])
    env = {
        "BERTH_RESERVATION_ID": rid,
        "BERTH_TENANT_ID": _env_value(now.get("tenantId")),
        "BERTH_NODE": _env_value(node),
        "BERTH_END": _env_value(now.get("end")),
        "CUDA_VISIBLE_DEVICES": uuids,
        "NVIDIA_VISIBLE_DEVICES": uuids,
    }
    files = {"env": "".join(f"{k}={v}\n" for k, v in env.items())}
    idle, at = now.get("idle"), now.get("preemptAt")
    if isinstance(idle, dict):
        fields = {k: idle.get(k) for k in ("since", "message", "keepWhenIdle", "releaseAt")}
        files["idle"] = json.dumps({"reservationId": rid, **fields}, sort_keys=True) + "\n"
    if isinstance(at, str):
        files["preempt"] = json.dumps({"reservationId": rid, "preemptAt": at}, sort_keys=True) + "\n"
    if isinstance(window := now.get("maintenance"), dict):
        fields = {k: window.get(k) for k in ("windowId", "start", "end", "reason", "nodes", "message")}
        files["maintenance"] = json.dumps({"reservationId": rid, **fields}, sort_keys=True) + "\n"
    return files


def _env_value(value: Any) -> str:
    # An env file is read by systemd and shells: keep values on one line, with nothing to expand.
    text = "" if value is None else str(value)
    return "".join(c for c in text if c.isprintable() and c not in "\"'`$\\ ")


class Output:
    """The agent's output directory; every file is written whole and renamed into place."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.reservations = os.path.join(root, "reservations")
        self.scratch = os.path.join(root, ".tmp")
        for path in (self.root, self.reservations, self.scratch):
            os.makedirs(path, exist_ok=True)

    def _write(self, path: str, text: str) -> None:
        fd, temp = tempfile.mkstemp(dir=self.scratch)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
            os.chmod(temp, 0o644)
            os.replace(temp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            raise

    def write(self, feed: dict[str, Any], node: str) -> int:
        """Write the feed and each held reservation's files (reservation_files); return how many."""
        held = held_devices(feed)  # raises on a bad shape, before anything is written
        written: set[str] = set()
        for rid, entry in sorted(held.items()):
            for kind, text in reservation_files(rid, entry, node).items():
                self._write(os.path.join(self.reservations, f"{rid}.{kind}"), text)
                written.add(f"{rid}.{kind}")
        for name in os.listdir(self.reservations):
            if name.rpartition(".")[2] in FILE_KINDS and name not in written:
                os.unlink(os.path.join(self.reservations, name))
        text = json.dumps(feed, indent=2, sort_keys=True) + "\n"
        self._write(os.path.join(self.root, "assignments.json"), text)
        return len(held)


class Agent:
    """Report every interval; long-poll the assignments and write them; back off while Berth is away."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.berth = Berth(settings)
        self.output = Output(settings.output)
        self.stop = threading.Event()
        self.etag: str | None = None

    def _ask(self, call, unreachable: str) -> Any:
        """Return Berth's answer to `call`; None (logged) when the token is unreadable or Berth away."""
        try:
            return call()
        except TokenError as exc:
            LOG.error("%s", exc)
        except UNREACHABLE as exc:
            LOG.warning("Berth unreachable at %s (%s); %s", self.settings.url, exc, unreachable)
        return None

    def report_once(self) -> bool:
        """Send one report; return whether Berth took it."""
        body = build_report(self.settings)
        asked = self._ask(lambda: self.berth.report(body), "the report is sent again later")
        if asked is None:
            return False
        status, answer, raw = asked
        # Berth's answer to a report counts what it took: a 200 without the counts is not Berth's.
        counts = [answer.get(k) for k in ("devices", "created", "markedUnhealthy", "becameHealthy")]
        if status == 200 and not all(isinstance(n, int) and not isinstance(n, bool) for n in counts):
            line = "the answer to the report is not Berth's (200, %r): is %s Berth's address?"
            LOG.error(line, _glimpse(raw), self.settings.url)
            return False
        if status == 200:
            if body.get("replace"):
                self.settings.replace = False  # once taken, later reports are the node's whole truth as usual
            LOG.info("report taken: %s devices (%s new, %s marked unhealthy, %s healthy again)", *counts)
            if answer.get("unverified"):
                LOG.warning(
                    "%s devices wait for an operator to accept them before they can be booked "
                    "(the node page, or manage.py accept_devices %s)",
                    answer["unverified"],
                    self.settings.node,
                )
            return True
        if status == 400 and "processOwners" in body and "'processOwners'" in str(answer.get("message")):
            # An older Berth that does not know the field: report as agents before 1.3 did.
            LOG.warning("Berth does not take processOwners; reporting without them from now on")
            self.settings.attribute = False
            return self.report_once()
        LOG.error("%s", self._refused("report", status, answer, raw))
        return False

    def _refused(self, what: str, status: int, answer: dict[str, Any], raw: bytes) -> str:
        """Return the log line of a refusal, with what to do about the usual ones."""
        said = answer.get("message") if isinstance(answer.get("message"), str) else _glimpse(raw)
        line = f"{what} refused ({status} {answer.get('code', '')}): {said.rstrip('. ')}"
        node, token_file = self.settings.node, self.settings.token_file
        if status == 401:
            line += (
                f"; the key in {token_file} no longer works: an operator issued node {node} a new one "
                f"(manage.py issue_token --node {node} or POST /api/v1/nodes/{node}/token replaces it), "
                f"revoked it, or it expired. Write the node's current key to {token_file}: it is read "
                "again on every call"
            )
        elif '"replace": true' in said:
            line += "; if the node's GPUs really were replaced, run the agent once with --replace"
        return line

    def assignments_once(self, wait: int) -> bool:
        """Read the assignments once (long-polling `wait` seconds); write them when they changed."""
        asked = self._ask(lambda: self.berth.assignments(self.etag, wait), "keeping the last assignments")
        if asked is None:
            return False
        status, tag, raw = asked
        if status == 304:
            return True
        if status != 200:
            LOG.error("%s", self._refused("assignments", status, _json_object(raw), raw))
            return False
        if len(raw) > MAX_ANSWER_BYTES:
            LOG.error("assignments answer larger than %s bytes; keeping the last files", MAX_ANSWER_BYTES)
            return False
        feed = _json_object(raw)
        try:
            count = self.output.write(feed, self.settings.node)
        except ValueError as exc:
            hint = f"; is {self.settings.url} Berth's address? It answered {_glimpse(raw)!r}"
            hint = "" if "node" in feed else hint
            LOG.error("bad assignments answer (%s); keeping the last files%s", exc, hint)
            return False
        self.etag = tag
        LOG.info("assignments as of %s: %s reservations hold devices now", feed.get("asOf"), count)
        return True

    def poll_assignments(self) -> bool:
        """Long-poll the assignments once; when Berth asks (Retry-After), wait before the next poll."""
        ok = self.assignments_once(int(self.settings.wait))
        self.stop.wait(self.berth.retry_after)
        return ok

    def _loop(self, step, pause: float) -> None:
        backoff = BACKOFF_FIRST
        while not self.stop.is_set():
            try:
                ok = step()
            except Exception:  # never die on a surprise: log it and carry on
                LOG.exception("unexpected error; carrying on")
                ok = False
            if ok:
                backoff, delay = BACKOFF_FIRST, pause
            else:
                delay, backoff = backoff, min(backoff * 2, BACKOFF_MOST)
                LOG.info("retrying in %.0f s", delay)
            self.stop.wait(delay)

    def run(self) -> None:
        # Both loops in threads: a long-poll (up to --wait s) is not cut by a signal, so the main
        # thread only waits for the stop, then gives them STOP_GRACE s to finish a write.
        loops = [
            threading.Thread(target=self._loop, args=(self.report_once, self.settings.interval), daemon=True),
            threading.Thread(target=self._loop, args=(self.poll_assignments, 0), daemon=True),
        ]
        for loop in loops:
            loop.start()
        while not self.stop.wait(0.2):
            pass
        deadline = time.monotonic() + STOP_GRACE
        for loop in loops:
            loop.join(timeout=max(0.0, deadline - time.monotonic()))


def main(argv: list[str] | None = None) -> int:
    settings, args = parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose or not args.once else logging.WARNING,
        format="%(asctime)s berth-agent %(levelname)s %(message)s",
        stream=sys.stderr,
    )
    try:
        agent = Agent(settings)
    except OSError as exc:
        LOG.error("cannot use the output directory %s: %s", settings.output, exc)
        return 2
    if args.once:
        reported = agent.report_once()
        written = agent.assignments_once(0)
        return 0 if reported and written else 1
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: agent.stop.set())
    where = (settings.node, settings.url, settings.interval, settings.output)
    LOG.info("reporting node %s to %s every %s s; writing to %s", *where)
    agent.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
