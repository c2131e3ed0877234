"""CPU per pool page in process (docs/benchmarks.md): not collected by default; run it by name with -s.

MISS=1 empties the cache before each request (every page drawn); PROF=1 prints a cProfile of 20.
"""

import cProfile
import os
import pstats
import time

import pytest


@pytest.fixture
def lab(make_node, tenant, other_tenant, book):
    for i in range(50):
        make_node(f"node-{i:02d}", gpus=8, vcpu=64, memory=512)
    for _ in range(30):
        book("acme", gpus=2)
    for _ in range(10):
        book("globex", gpus=1)


@pytest.mark.django_db(transaction=True)
def test_profile_pool_page(lab, op, alice):
    from django.core.cache import cache
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    for who, client in (("operator", op), ("tenant", alice)):
        client.get("/pools/lab-pool/")  # warm
        n = 30
        t0 = time.process_time()
        for i in range(n):
            if os.environ.get("MISS"):
                cache.key_prefix = f"miss-{who}-{i}-{time.time_ns()}"  # never clear(): Redis is shared
            assert client.get("/pools/lab-pool/").status_code == 200
        cpu = (time.process_time() - t0) / n * 1000
        with CaptureQueriesContext(connection) as q:
            client.get("/pools/lab-pool/")
        print(f"\n{who}: pool page {cpu:.1f} ms CPU, {len(q)} statements")
    if os.environ.get("PROF"):
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(20):
            op.get("/pools/lab-pool/")
        prof.disable()
        pstats.Stats(prof).sort_stats("cumulative").print_stats(
            "berth|wt/cache|template/loader|session|auth", 60
        )
