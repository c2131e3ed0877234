"""Node-report benchmark (bench_reports): a fleet of agents reporting, first with news, then without.

Builds pool bench-reports with `nodes` empty nodes, each with its own node credential, and posts
each node's report as the reference agent does (the texts of `nvidia-smi -q -x`, `-L` and `topo -m`
of an 8 × H100 box, its UUIDs made the node's own) through Django's test client: the whole request
path (authentication, the node gate, parsing, the writes) in this process, without HTTP. Round 1
creates every node's devices and links; the later rounds repeat it, as agents do every 30 s, and
must write nothing: no device, link, label or image row and no bump of the pool's generation.
"""

from __future__ import annotations

import json
import re
import statistics
import time
from pathlib import Path

from django.db import connection, transaction
from django.test import Client

from devtools.bench.placements import _pct
from identity.tokens import issue_node_token
from inventory.models import Device, Node, Pool, PoolGeneration, Site

BOX = Path(__file__).resolve().parents[2] / "tests" / "agent" / "fixtures" / "h100-8"
SLUG = "bench-reports"
_UUID = re.compile(r"\b(GPU|MIG)-[0-9a-f]{8}")
_WRITES = ("INSERT", "UPDATE", "DELETE")


def _texts() -> dict[str, str]:
    return {
        "query": (BOX / "nvidia-smi-q.xml").read_text(),
        "list": (BOX / "nvidia-smi-L.txt").read_text(),
        "topo": (BOX / "topo-m.txt").read_text(),
    }


def _body_for(texts: dict[str, str], number: int) -> bytes:
    """Return node `number`'s report: the box's texts with UUIDs of its own (the first 8 hex digits)."""
    own = {key: _UUID.sub(lambda m: f"{m.group(1)}-{number:08x}", text) for key, text in texts.items()}
    return json.dumps({"nvidiaSmi": own}).encode()


def _build(nodes: int) -> list[tuple[str, str]]:
    """Create (or reset) the pool's nodes, empty, and return (node name, token key) for each."""
    site, _ = Site.objects.get_or_create(slug="bench", defaults={"name": "Benchmark"})
    pool, _ = Pool.objects.get_or_create(slug=SLUG, defaults={"name": "Benchmark reports", "site": site})
    with transaction.atomic():
        Node.objects.filter(pool=pool).delete()
        Node.objects.bulk_create(Node(name=f"{SLUG}-{i:05d}", pool=pool) for i in range(nodes))
    return [(f"{SLUG}-{i:05d}", issue_node_token(f"{SLUG}-{i:05d}").key) for i in range(nodes)]


def _generation() -> int | None:
    row = PoolGeneration.objects.filter(pool__slug=SLUG).first()
    return row.generation if row else None


def run_reports(nodes: int, rounds: int, progress=None) -> dict:
    """Post `rounds` reports from each of `nodes` agents; return the figures of each round."""
    credentials = _build(nodes)
    texts = _texts()
    bodies = [_body_for(texts, i) for i in range(nodes)]
    client = Client()
    figures = []
    for number in range(1, rounds + 1):
        before = _generation()
        wall: list[float] = []
        cpu: list[float] = []
        items = list(zip(credentials, bodies, strict=True))
        seen: list[str] = []

        def count(execute, sql, params, many, context, seen=seen):
            # A wrapper, not CaptureQueriesContext: Django's query log keeps only the last 9,000.
            seen.append(sql)
            return execute(sql, params, many, context)

        with connection.execute_wrapper(count):
            for (name, key), body in progress(items, number) if progress else items:
                t0, c0 = time.perf_counter(), time.process_time()
                answer = client.post(
                    f"/api/v1/nodes/{name}/report",
                    body,
                    content_type="application/json",
                    HTTP_AUTHORIZATION=f"Token {key}",
                )
                wall.append((time.perf_counter() - t0) * 1000)
                cpu.append((time.process_time() - c0) * 1000)
                if answer.status_code != 200:
                    raise RuntimeError(f"{name}: {answer.status_code} {answer.content[:300]!r}")
        statements = len(seen)
        # Every report records its time (NodeReport), this minute's utilization (DeviceSample) and the
        # token's last use; nothing else may write.
        writes = sum(
            1
            for sql in seen
            if sql.lstrip().split(" ", 1)[0] in _WRITES
            and "inventory_nodereport" not in sql
            and "inventory_devicesample" not in sql
            and "token" not in sql
        )
        wall.sort()
        cpu.sort()
        figures.append(
            {
                "round": number,
                "reports": nodes,
                "reportsPerSecond": round(nodes / (sum(wall) / 1000), 1),
                "p50Ms": round(_pct(wall, 50), 2),
                "p95Ms": round(_pct(wall, 95), 2),
                "cpuMsPerReport": round(statistics.fmean(cpu), 2),
                "statementsPerReport": round(statements / nodes, 1),
                "inventoryWritesPerReport": round(writes / nodes, 2),
                "generationBumped": _generation() != before,
            }
        )
    devices = Device.objects.filter(node__pool__slug=SLUG).count()
    if devices != nodes * 8:
        raise RuntimeError(f"{devices} devices stored; expected {nodes * 8}")
    return {"nodes": nodes, "devicesStored": devices, "rounds": figures}
