"""The reserve, preview, release, cordon and uncordon commands: output, --json, and exit codes."""

import json

import pytest
from django.core.management.base import CommandError

from capacity.models import Reservation
from inventory import services as inventory
from inventory.models import Node

BOOK = ("--tenant", "acme", "--pool", "lab-pool")


def test_reserve_books_and_prints_where(run, hosts):
    out = run("reserve", *BOOK, "--gpus", "2", "--for", "3d")
    reservation = Reservation.objects.get()
    first, second = out.splitlines()
    assert first.startswith(f"reservation {reservation.pk} placed: acme in lab-pool, ")
    assert " → " in first
    assert second == "  node-a: GPU-node-a-0, GPU-node-a-1"
    assert (reservation.ends_at - reservation.starts_at).days == 3


def test_reserve_json_is_what_the_api_answers(run, hosts, client):
    data = json.loads(
        run("reserve", *BOOK, "--gpus", "1", "--for", "1d", "--vcpu", "8", "--memory", "64", "--json")
    )
    assert data["status"] == "placed"
    assert data["allocations"][0]["resources"] == {"vcpu": 8, "memoryGiB": 64}
    assert data["request"] == {
        "tenantId": "acme",
        "poolId": "lab-pool",
        "devices": [{"class": "gpu", "count": 1}],
        "resources": {"vcpu": 8, "memoryGiB": 64},
        "duration": "1d",
    }


def test_reserve_takes_the_specs_options(run, hosts):
    inventory.cordon("node-a")
    inventory.cordon("node-b")
    # Both nodes cordoned: eligibility turns them down before any selector is read.
    run(
        "reserve", *BOOK, "--gpus", "8", "--class", "gpu", "--for", "3d", "--nvlink",
        "--selector", "gpuProduct in (H100-SXM5-80GB), vramGiB >= 80", "--priority", "spot",
        "--idempotency-key", "train-1",
    )  # fmt: skip
    reservation = Reservation.objects.get()
    assert reservation.request["input"] == {
        "tenantId": "acme",
        "poolId": "lab-pool",
        "devices": [
            {"class": "gpu", "count": 8, "selector": "gpuProduct in (H100-SXM5-80GB), vramGiB >= 80"}
        ],
        "topology": "nvlink-all",
        "duration": "3d",
        "priority": "spot",
        "idempotencyKey": "train-1",
    }
    assert (reservation.priority, reservation.idempotency_key) == ("spot", "train-1")


def test_reserve_places_by_selector(run, hosts):
    from inventory.models import Device

    Device.objects.filter(node__name="node-b").update(
        attributes={"gpuProduct": "H100-SXM5-80GB", "vramGiB": 80}
    )
    out = run(
        "reserve",
        *BOOK,
        "--gpus",
        "2",
        "--for",
        "1d",
        "--selector",
        "gpuProduct in (H100-SXM5-80GB), vramGiB >= 80",
    )
    assert out.splitlines()[1] == "  node-b: GPU-node-b-0, GPU-node-b-1"


def test_reserve_books_a_window_from_start_and_for_or_end(run, hosts):
    run("reserve", *BOOK, "--gpus", "1", "--start", "2030-01-01T00:00Z", "--for", "12h")
    run("reserve", *BOOK, "--gpus", "1", "--start", "2030-01-01T00:00+00:00", "--end", "2030-01-03T00:00Z")
    windows = sorted((r.starts_at.isoformat(), r.ends_at.isoformat()) for r in Reservation.objects.all())
    assert windows == [
        ("2030-01-01T00:00:00+00:00", "2030-01-01T12:00:00+00:00"),
        ("2030-01-01T00:00:00+00:00", "2030-01-03T00:00:00+00:00"),
    ]


def test_reserve_with_the_same_key_answers_the_first_reservation(run, hosts):
    run("reserve", *BOOK, "--gpus", "1", "--for", "1d", "--idempotency-key", "k1")
    out = run("reserve", *BOOK, "--gpus", "1", "--for", "1d", "--idempotency-key", "k1")
    reservation = Reservation.objects.get()
    assert out.startswith(f"reservation {reservation.pk} (existing, idempotency key k1) placed: ")


def test_a_pending_reservation_is_not_an_error(run, hosts):
    inventory.cordon("node-b")
    out = run("reserve", *BOOK, "--gpus", "5", "--for", "1d")
    assert " pending: acme in lab-pool" in out.splitlines()[0]
    assert out.splitlines()[1] == "  reason: no node fits (2 nodes): 1 × fits: 4 of 5 gpu free; 1 × cordoned"


def test_fail_on_pending_exits_3(run, hosts):
    inventory.cordon("node-b")
    with pytest.raises(CommandError) as failed:
        run("reserve", *BOOK, "--gpus", "5", "--for", "1d", "--fail-on-pending")
    assert failed.value.returncode == 3
    assert str(failed.value) == "PENDING: no node fits (2 nodes): 1 × fits: 4 of 5 gpu free; 1 × cordoned"
    assert Reservation.objects.get().status == "pending"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--gpus", "1", "--for", "3days"), "INVALID_INPUT: duration must look like 30m, 12h, 3d or 2w"),
        (("--gpus", "1", "--for", "99999999999d"), "INVALID_INPUT: duration must be at most 366d"),
        (("--gpus", "1", "--start", "2030-01-01T00:00Z", "--for", "1y"), "INVALID_INPUT: --for must look like"),
        (("--gpus", "1", "--start", "2030-01-01T00:00", "--for", "1d"), "INVALID_INPUT: --start must carry a time zone"),
        (("--gpus", "1", "--start", "soon", "--for", "1d"), "INVALID_INPUT: --start must be an ISO 8601 time"),
        (("--gpus", "1", "--end", "2030-01-01T00:00Z"), "INVALID_INPUT: --end needs --start"),
        (("--gpus", "1", "--for", "1d", "--selector", "gpuProduct in ("), "INVALID_INPUT: devices[0].selector"),
        (("--for", "1d",), "INVALID_INPUT: devices or resources: a request must claim at least one device"),
        (("--gpus", "1", "--for", "1d", "--gang", "99"), "INVALID_INPUT: gang.size must be an integer from 1 to 64"),
    ],
)  # fmt: skip
def test_bad_input_is_refused_with_its_code_and_exit_code_2(run, hosts, argv, message):
    with pytest.raises(CommandError) as failed:
        run("reserve", *BOOK, *argv)
    assert failed.value.returncode == 2
    assert str(failed.value).startswith(message)
    assert not Reservation.objects.exists()


def test_an_unknown_pool_is_not_found(run, hosts):
    with pytest.raises(CommandError) as failed:
        run("reserve", "--tenant", "acme", "--pool", "nowhere", "--gpus", "1", "--for", "1d")
    assert (failed.value.returncode, str(failed.value)) == (2, "NOT_FOUND: no pool nowhere")


def test_from_a_shell_a_refusal_prints_error_code_and_message_on_stderr(shell, hosts):
    code, out, err = shell("reserve", *BOOK, "--gpus", "1", "--for", "3days")
    assert (code, out) == (2, "")
    assert err == "error: INVALID_INPUT: duration must look like 30m, 12h, 3d or 2w\n"


def test_from_a_shell_a_booking_exits_0(shell, hosts):
    code, out, err = shell("reserve", *BOOK, "--gpus", "1", "--for", "1d", "--json")
    assert (code, err) == (0, "")
    assert json.loads(out)["status"] == "placed"


def test_preview_prints_ranked_candidates_and_books_nothing(run, hosts):
    run("reserve", *BOOK, "--gpus", "1", "--for", "1d")
    lines = run("preview", *BOOK, "--gpus", "2", "--for", "1d").splitlines()
    assert lines[0] == "fits: 2 candidates, best first"
    assert lines[1].startswith("  1. node-a  score ")
    assert "binpack " in lines[1] and "topology 1.000" in lines[1]
    assert lines[2] == "     atoms: GPU-node-a-1, GPU-node-a-2"
    assert lines[3].startswith("  2. node-b  score ")
    assert Reservation.objects.count() == 1


def test_preview_explain_lists_every_rejected_node(run, hosts):
    inventory.cordon("node-b")
    lines = run("preview", *BOOK, "--gpus", "2", "--for", "1d", "--explain").splitlines()
    assert lines[-2:] == ["rejected (1):", "  node-b  eligible: cordoned"]


def test_preview_says_why_nothing_fits_and_exits_0(run, hosts):
    inventory.cordon("node-b")
    out = run("preview", *BOOK, "--gpus", "5", "--for", "1d")
    assert out == (
        "does not fit: no node fits (2 nodes): 1 × fits: 4 of 5 gpu free; 1 × cordoned\n"
        "never fits: the largest node in lab-pool has 4 gpu\n"
        "hint: fits with 4 gpu on 1 node\n"
    )


def test_preview_prints_hints_when_nothing_fits(run, hosts):
    run("reserve", *BOOK, "--gpus", "4", "--start", "2031-01-01T00:00Z", "--for", "6h")
    run("reserve", *BOOK, "--gpus", "2", "--start", "2031-01-01T00:00Z", "--for", "3h")
    out = run("preview", *BOOK, "--gpus", "4", "--start", "2031-01-01T00:00Z", "--for", "2h")
    assert out.splitlines()[1:] == [
        "hint: fits from 2031-01-01T03:00Z on node-b",
        "hint: fits with 2 gpu on 1 node",
    ]


def test_earliest_prints_the_start_and_the_node(run, hosts):
    run("reserve", *BOOK, "--gpus", "4", "--start", "2031-01-01T00:00Z", "--for", "6h")
    run("reserve", *BOOK, "--gpus", "4", "--start", "2031-01-01T00:00Z", "--for", "9h")
    out = run("earliest", *BOOK, "--gpus", "4", "--start", "2031-01-01T00:00Z", "--for", "2h")
    lines = out.splitlines()
    assert lines[0] == "earliest start: 2031-01-01T06:00:00Z (until 2031-01-01T08:00:00Z)"
    assert lines[1].startswith("  node-")
    data = json.loads(
        run("earliest", *BOOK, "--gpus", "4", "--start", "2031-01-01T00:00Z", "--for", "2h", "--json")
    )
    assert (data["fits"], data["start"], data["horizon"]) == (True, "2031-01-01T06:00:00Z", "14d")


def test_earliest_within_a_horizon_that_is_too_short_exits_3_with_fail_if_no_fit(run, hosts):
    run("reserve", *BOOK, "--gpus", "4", "--start", "2031-01-01T00:00Z", "--for", "2d")
    run("reserve", *BOOK, "--gpus", "4", "--start", "2031-01-01T00:00Z", "--for", "2d")
    args = (
        "earliest",
        *BOOK,
        "--gpus",
        "1",
        "--start",
        "2031-01-01T00:00Z",
        "--for",
        "1h",
        "--horizon",
        "1d",
    )
    assert run(*args) == "does not fit: no start fits before 2031-01-02T00:00Z (horizon 1d)\n"
    with pytest.raises(CommandError) as failed:
        run(*args, "--fail-if-no-fit")
    assert failed.value.returncode == 3


def test_preview_fail_if_no_fit_exits_3(run, hosts):
    with pytest.raises(CommandError) as failed:
        run("preview", *BOOK, "--gpus", "5", "--for", "1d", "--fail-if-no-fit")
    assert failed.value.returncode == 3


def test_preview_json_is_what_the_api_answers(run, hosts):
    inventory.cordon("node-b")
    data = json.loads(run("preview", *BOOK, "--gpus", "4", "--for", "1d", "--explain", "--json"))
    assert data["fits"] is True
    assert [c["nodeId"] for c in data["candidates"]] == ["node-a"]
    assert data["rejected"] == [{"nodeId": "node-b", "filter": "eligible", "reason": "cordoned"}]
    assert "reason" not in data


def test_release_ends_a_reservation(run, hosts):
    data = json.loads(run("reserve", *BOOK, "--gpus", "1", "--for", "1d", "--json"))
    out = run("release", str(data["id"]))
    assert out.startswith(f"reservation {data['id']} released at ")
    released = json.loads(run("release", str(data["id"]), "--json"))
    assert (released["status"], released["allocations"][0]["releasedAt"]) == (
        "released",
        released["releasedAt"],
    )


@pytest.mark.parametrize("rid", ["999", "abc"])
def test_releasing_an_unknown_reservation_is_not_found(run, tenant, rid):
    with pytest.raises(CommandError) as failed:
        run("release", rid)
    assert (failed.value.returncode, str(failed.value)) == (2, f"NOT_FOUND: no reservation {rid}")


def test_cordon_and_uncordon(run, hosts):
    assert run("cordon", "node-a") == "node node-a cordoned\n"
    assert Node.objects.get(name="node-a").cordoned
    data = json.loads(run("uncordon", "node-a", "--json"))
    assert (data["name"], data["cordoned"], data["state"]) == ("node-a", False, "schedulable")


@pytest.mark.parametrize("command", ["cordon", "uncordon"])
def test_cordoning_an_unknown_node_is_not_found(shell, db, command):
    assert shell(command, "ghost") == (2, "", "error: NOT_FOUND: no node ghost\n")


def test_quota_prints_the_peak_held_at_once_against_each_limit(run, hosts, tenant):
    from capacity.models import Quota

    Quota.objects.create(tenant=tenant, resource="gpu", limit=8)
    run("reserve", *BOOK, "--gpus", "2", "--for", "3d")
    run("reserve", *BOOK, "--gpus", "1", "--for", "1d")
    lines = run("quota", "--tenant", "acme").splitlines()
    assert lines[0].startswith("quota of acme, ")
    assert lines[1].split() == ["resource", "now", "peak", "limit"]
    assert lines[2].split() == ["gpu", "3", "3", "8"]
    assert lines[3].split() == ["*", "(default)", "1000000"]
    data = json.loads(run("quota", "--tenant", "acme", "--json"))
    assert data["quota"][0] == {"resource": "gpu", "limit": 8, "peak": 3, "now": 3, "default": False}
    with pytest.raises(CommandError) as err:
        run("quota", "--tenant", "nobody")
    assert str(err.value) == "NOT_FOUND: no tenant nobody"


def test_reserve_whole_node_leases_a_node_and_a_gang_with_a_topology_key(run, hosts):
    out = run("reserve", *BOOK, "--whole-node", "--for", "1d")
    reservation = Reservation.objects.get()
    assert (reservation.status, reservation.binding) == ("placed", "node")
    assert out.splitlines()[1].startswith("  node-a: GPU-node-a-0, GPU-node-a-1")
    with pytest.raises(CommandError, match="--topology-key needs --gang"):
        run("reserve", *BOOK, "--whole-node", "--for", "1d", "--topology-key", "rack")


def test_preview_says_which_spot_work_a_regular_request_would_preempt(run, hosts):
    run("reserve", *BOOK, "--whole-node", "--for", "1d", "--priority", "spot")
    run("reserve", *BOOK, "--whole-node", "--for", "1d", "--priority", "spot")
    spot = sorted(Reservation.objects.values_list("pk", flat=True))
    out = run("preview", *BOOK, "--gpus", "1", "--for", "1h")
    assert out.splitlines()[0].startswith("does not fit: no node fits (2 nodes)")
    assert out.splitlines()[1].startswith("fits by preempting spot reservation(s) ")
    assert int(out.splitlines()[1].split()[5]) in spot


def test_drain_cordons_and_lists_what_runs(run, hosts):
    run("reserve", *BOOK, "--gpus", "2", "--for", "1d")
    reservation = Reservation.objects.get()
    node = reservation.allocations.get().node.name
    out = run("drain", node, "--reason", "bad fan")
    first, second = out.splitlines()
    assert first.startswith(f"node {node} draining until ")
    assert second.startswith(f"  running: reservation {reservation.pk} until ")
    assert Node.objects.get(name=node).cordoned


def test_cordon_uncordon_and_drain_take_a_reason_and_the_history_names_the_command(run, hosts):
    from inventory.node_changelog import entries, node_history

    run("cordon", "node-a", "--reason", "bad fan")
    run("uncordon", "node-a")
    run("drain", "node-a", "--reason", "psu swap")
    node = Node.objects.get(name="node-a")
    assert [(e.actor, e.change, e.reason) for e in entries(node_history(node))][:3] == [
        ("command:drain", "drain started", "psu swap"),
        ("command:uncordon", "uncordoned", ""),
        ("command:cordon", "cordoned", "bad fan"),
    ]


def test_a_reason_over_200_characters_is_refused_with_exit_code_2(run, hosts):
    with pytest.raises(CommandError) as err:
        run("cordon", "node-a", "--reason", "x" * 201)
    assert err.value.returncode == 2
    assert str(err.value) == "INVALID_INPUT: reason must be text of at most 200 characters"
    assert not Node.objects.get(name="node-a").cordoned


def test_a_booking_past_a_pool_limit_is_refused_with_policy_limit(run, hosts):
    from datetime import timedelta

    from policy.pool_policy import set_policy

    set_policy("lab-pool", {"max_duration": timedelta(days=7)})
    with pytest.raises(CommandError) as failed:
        run("reserve", *BOOK, "--gpus", "1", "--for", "8d")
    assert failed.value.returncode == 2
    assert str(failed.value) == "POLICY_LIMIT: maxDuration is 7d; this asks 8d"
    assert not Reservation.objects.exists()


def test_maintenance_window_schedules_lists_and_deletes_and_refuses_bad_input(run, shell, hosts):
    from datetime import timedelta

    from django.utils import timezone

    from capacity.models import MaintenanceWindow

    start = (timezone.now() + timedelta(days=1)).replace(minute=0, second=0, microsecond=0)
    end = start + timedelta(hours=4)
    out = run("maintenance_window", "schedule", "--nodes", "node-a", "--start", start.isoformat(),
              "--end", end.isoformat(), "--reason", "firmware")  # fmt: skip
    window = MaintenanceWindow.objects.get()
    assert out.startswith(f"maintenance window {window.pk}: {start:%Y-%m-%d %H:%M}")
    assert window.created_by == "command:maintenance_window"
    assert run("maintenance_window", "list", "--node", "node-a").split()[0] == str(window.pk)
    code, _out, err = shell("maintenance_window", "schedule", "--nodes", "node-a", "--start",
                            end.isoformat(), "--end", start.isoformat())  # fmt: skip
    assert code == 2 and "INVALID_INPUT: end:" in err
    assert run("maintenance_window", "delete", str(window.pk)) == f"deleted maintenance window {window.pk}\n"
    assert not MaintenanceWindow.objects.exists()
    from trail.models import AuditRecord

    rows = AuditRecord.objects.filter(object=f"maintenance:{window.pk}").order_by("id")
    assert [(r.action, r.actor) for r in rows] == [
        ("maintenance.schedule", "command:maintenance_window"),
        ("maintenance.delete", "command:maintenance_window"),
    ]
