"""The what-if queue's caps hold when one person asks many times at once."""

import threading

import pytest
from django.contrib.auth.models import User
from django.db import connection

from capacity.placement import CapacityError
from whatif import runs as whatif_runs
from whatif.demand import Synthetic
from whatif.models import WhatIfRun
from whatif.simulation import Inputs


@pytest.mark.django_db(transaction=True)
def test_sixteen_runs_asked_at_once_by_one_person_queue_three(make_node, tenant):
    make_node("n1", gpus=4)
    user = User.objects.create(username="olga")
    inputs = Inputs("lab-pool", synthetic=Synthetic(count=10))
    start = threading.Barrier(16)
    refused: list[str] = []

    def ask() -> None:
        try:
            start.wait()
            whatif_runs.queue(inputs, user)
        except CapacityError as err:
            refused.append(err.code)
        finally:
            connection.close()

    threads = [threading.Thread(target=ask) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert WhatIfRun.objects.filter(created_by=user).count() == whatif_runs.MAX_WAITING_PER_USER == 3
    assert refused == ["THROTTLED"] * 13
