"""The worker runs what-if runs in a process of its own, beside the placer's threads."""

import threading
import time

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from whatif import runs as whatif_runs
from whatif.changes import Changes
from whatif.demand import Synthetic
from whatif.models import WhatIfRun
from whatif.simulation import Inputs

from databases import this_database_url


def _queue(inputs: Inputs) -> WhatIfRun:
    return whatif_runs.queue(inputs, User.objects.create(username=f"op-{time.monotonic_ns()}"))


def _serve(stop: threading.Event) -> None:
    """Serve as run_placer's job thread does, closing the thread's connection at the end."""
    try:
        whatif_runs.serve(stop)
    finally:
        connection.close()


@pytest.mark.django_db(transaction=True)
def test_the_worker_runs_a_queued_run_in_its_own_process(make_node, tenant, monkeypatch):
    for name in ("n1", "n2"):
        make_node(name, gpus=4)
    run = _queue(Inputs("lab-pool", synthetic=Synthetic(count=80, seed=2), changes=Changes(add=(("n1", 1),))))
    monkeypatch.setenv("DATABASE_URL", this_database_url("whatif-run"))  # the child's database: this test's
    stop = threading.Event()
    worker = threading.Thread(target=_serve, args=(stop,))
    worker.start()
    try:
        deadline = time.monotonic() + 60
        while WhatIfRun.objects.get(pk=run.pk).status != "done":
            assert time.monotonic() < deadline, WhatIfRun.objects.get(pk=run.pk).error
            time.sleep(0.2)
    finally:
        stop.set()
        worker.join(timeout=30)
    run.refresh_from_db()
    assert run.progress == 100 and run.result["changed"]["nodes"] == 3
    # The same inputs run here give the same result as the child's.
    again = _queue(
        Inputs("lab-pool", synthetic=Synthetic(count=80, seed=2), changes=Changes(add=(("n1", 1),)))
    )
    assert whatif_runs.run_once() == f"what-if #{again.pk} done"
    again.refresh_from_db()
    assert again.result == run.result


@pytest.mark.django_db
def test_whatif_run_runs_only_a_claimed_run(make_node, tenant):
    make_node("n1", gpus=4)
    run = _queue(Inputs("lab-pool", synthetic=Synthetic(count=10)))
    with pytest.raises(CommandError, match=f"no running what-if run #{run.pk}"):
        call_command("whatif_run", str(run.pk))
    assert whatif_runs.claim().pk == run.pk
    call_command("whatif_run", str(run.pk))
    run.refresh_from_db()
    assert run.status == "done"
