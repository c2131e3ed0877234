"""CPU per node page and reservations list in process (docs/benchmarks.md): not collected by default.

Run it by name with -s. MISS=1 misses the cache before each request (every page drawn); PROF=1
prints a cProfile of 20 node pages (PROF=list: of the reservations list).
"""

import cProfile
import gc
import os
import pstats
import time

import pytest

PAGES = {"node page": "/nodes/node-07/", "reservations list": "/reservations/"}


@pytest.fixture
def lab(make_node, tenant, other_tenant, book):
    for i in range(50):
        make_node(f"node-{i:02d}", gpus=8, vcpu=64, memory=512)
    for _ in range(30):
        book("acme", gpus=2)
    for _ in range(10):
        book("globex", gpus=1)
    for _ in range(8):
        book("acme", gpus=8, pool="lab-pool", duration="1d")  # whole nodes: node-07 among them


@pytest.mark.django_db(transaction=True)
def test_profile_node_page_and_reservations(lab, op, alice):
    from django.core.cache import cache
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    for what, url in PAGES.items():
        for who, client in (("operator", op), ("tenant", alice)):
            client.get(url)  # warm
            n = 30
            if os.environ.get("NOGC"):
                gc.collect()
                gc.disable()
            t0 = time.process_time()
            for i in range(n):
                if os.environ.get("MISS"):
                    cache.key_prefix = f"miss-{who}-{i}-{time.time_ns()}"  # never clear(): Redis is shared
                assert client.get(url).status_code == 200
            cpu = (time.process_time() - t0) / n * 1000
            gc.enable()
            with CaptureQueriesContext(connection) as q:
                client.get(url)
            print(f"\n{who}: {what} {cpu:.1f} ms CPU, {len(q)} statements")
    if os.environ.get("PROF"):
        url = PAGES["reservations list" if os.environ["PROF"] == "list" else "node page"]
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(20):
            op.get(url)
        prof.disable()
        pstats.Stats(prof).sort_stats(os.environ.get("SORT", "cumulative")).print_stats(
            os.environ.get("FILTER", "berth|pagecache|template/loader"), 70
        )


def demo(node: str = "") -> None:
    """Print CPU per page on a seeded database (`seed_demo`), in a plain process without pytest."""
    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth.models import User
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from capacity.models import DeviceBooking

    settings.ALLOWED_HOSTS = ["*"]
    node = node or DeviceBooking.objects.select_related("device__node").first().device.node.name
    for who in ("operator", "acme"):
        client = Client()
        client.force_login(User.objects.get(username=who))
        for what, url in {"node page": f"/nodes/{node}/", "reservations list": "/reservations/"}.items():
            assert client.get(url).status_code == 200
            t0 = time.process_time()
            for _ in range(30):
                client.get(url)
            cpu = (time.process_time() - t0) / 30 * 1000
            with CaptureQueriesContext(connection) as q:
                client.get(url)
            print(f"{who}: {what} {cpu:.1f} ms CPU, {len(q)} statements")


if __name__ == "__main__":
    # DATABASE_URL=... .venv/bin/python tests/web/profile_node_and_reservations.py [NODE]
    import sys

    sys.path.insert(0, os.getcwd())
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    demo(*sys.argv[1:2])
