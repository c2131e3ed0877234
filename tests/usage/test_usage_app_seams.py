"""Where usage meets the apps that never import it: capacity's hooks, inventory's signal, the worker.

node-a: [GPU0 GPU1 GPU2 GPU3]  (lab-pool, from two_labelled_hosts); node-b alike
"""

from datetime import timedelta

from django.utils import timezone

from capacity import services, worker_jobs
from capacity.services import usage_hooks
from inventory.ingest import apply_node_report
from inventory.models import Device, DeviceSample, Node
from inventory.trust import Reporter
from usage.figures import usage_for
from usage.models import DeviceSampleHour, SampleFold, UnbookedUse


def gpu(i, node="node-a"):
    return {"uuid": f"GPU-{node}-{i}", "class": "gpu", "index": i, "healthy": True}


def test_capacity_asks_usage_for_a_reservations_figures_through_its_hooks(lab, tenant, ask, as_acme):
    rid = int(as_acme.post("/api/v1/reservations", ask(gpus=1), format="json").json()["id"])
    booked = services.allocations_of(services.get(rid))[0]["atoms"][0]
    device = Device.objects.get(uuid=booked)
    DeviceSample.objects.create(
        device=device, minute=timezone.now().replace(second=0, microsecond=0), gpu_percent=40
    )
    assert services.usage_for([rid]) == usage_for([rid]) != {}
    assert usage_hooks.unbooked_use_on(Node.objects.get(name="node-a")) == []


def test_a_withdrawn_device_takes_its_hourly_rows_with_it_in_the_report(lab):
    node = Node.objects.get(name="node-a")
    by_node = Reporter.node_credential("node-a")
    apply_node_report(node, {"devices": [gpu(i) for i in range(4)] + [gpu(9)]}, by=by_node)
    made_up = Device.objects.get(uuid="GPU-node-a-9", verified=False)
    hour = timezone.now().replace(minute=0, second=0, microsecond=0) - timedelta(hours=1)
    DeviceSampleHour.objects.create(device=made_up, hour=hour, gpu_percent_sum=600, samples=60)
    kept = DeviceSampleHour.objects.create(
        device=Device.objects.get(uuid="GPU-node-a-0"), hour=hour, samples=60
    )
    apply_node_report(node, {"devices": [gpu(i) for i in range(4)]}, by=by_node)
    assert not Device.objects.filter(uuid="GPU-node-a-9").exists()
    assert list(DeviceSampleHour.objects.all()) == [kept]


def test_the_worker_runs_usages_job_which_folds_and_checks_and_says_nothing(lab):
    device = Device.objects.get(uuid="GPU-node-b-2")
    minute = timezone.now().replace(second=0, microsecond=0) - timedelta(hours=2)
    DeviceSample.objects.create(device=device, minute=minute, gpu_percent=30, processes=1, process_mib=1024)
    DeviceSample.objects.create(
        device=device, minute=timezone.now().replace(second=0, microsecond=0), processes=2
    )
    assert worker_jobs.JOBS["usage"].run_once() == ""
    assert SampleFold.objects.get().folded_until > minute
    assert DeviceSampleHour.objects.get(device=device).gpu_percent_sum == 30
    assert list(UnbookedUse.objects.values_list("device_id", "processes")) == [(device.pk, 2)]
