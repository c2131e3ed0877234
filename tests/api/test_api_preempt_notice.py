"""Notice before preemption over the API: spot work taken back reads preemptAt; the regular booking says why it waits."""

from datetime import datetime, timedelta

from policy.notice import finish_due

POLICY = "/api/v1/pools/lab-pool/policy"


def test_spot_work_under_notice_reads_preempt_at_and_the_regular_booking_says_when_it_starts(
    as_operator, as_acme, lab, tenant, ask
):
    assert as_operator.put(POLICY, {"spotNotice": "10m"}, format="json").status_code == 200
    spot = [
        as_acme.post("/api/v1/reservations", ask(4, priority="spot"), format="json").json() for _ in range(2)
    ]
    assert [s["preemptAt"] for s in spot] == [None, None]
    created = as_acme.post("/api/v1/reservations", ask(4), format="json")
    assert created.status_code == 201, created.json()
    regular = created.json()
    [taken] = regular["preempted"]["reservations"]
    victim = as_acme.get(f"/api/v1/reservations/{taken}").json()
    assert victim["status"] == "placed"
    preempt_at = datetime.fromisoformat(victim["preemptAt"].replace("Z", "+00:00"))
    # The regular booking's devices are booked from preemptAt, when the spot work's end.
    [allocation] = regular["allocations"]
    assert allocation["start"] == victim["preemptAt"]
    # Its allocation ends at preemptAt, still live: a release meanwhile still ends it sooner.
    assert (victim["allocations"][0]["end"], victim["allocations"][0]["releasedAt"]) == (
        victim["preemptAt"],
        None,
    )
    assert timedelta(minutes=9) < preempt_at - datetime.fromisoformat(
        regular["createdAt"].replace("Z", "+00:00")
    )
    [why] = [c for c in regular["conditions"] if c["type"] == "StartsLater"]
    assert why["message"].endswith("spot work there has until then (spotNotice 10m)")
    assert [c["type"] for c in victim["conditions"]] == ["PreemptAt"]
    # Once the notice is over the worker preempts it; preemptAt is then its releasedAt.
    finish_due(preempt_at)
    ended = as_acme.get(f"/api/v1/reservations/{taken}").json()
    assert (ended["status"], ended["preemptAt"], ended["releasedAt"]) == (
        "preempted",
        None,
        victim["preemptAt"],
    )
