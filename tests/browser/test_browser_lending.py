"""Lent GPUs in a real browser: the owner reclaims them in a pool with a spotNotice, and its page says
until when they are shared."""

import os
from datetime import timedelta
from pathlib import Path

import pytest
from playwright.sync_api import expect

from chromium import CHROMIUM, SKIP_REASON

pytestmark = [pytest.mark.browser, pytest.mark.skipif(not CHROMIUM.exists(), reason=SKIP_REASON)]


def test_the_owner_reclaims_and_reads_until_when_its_gpus_are_shared(login, demo, tmp_path):
    from capacity import services
    from capacity.models import Reservation
    from capacity.models.reservations import IDLE
    from inventory.models import DeviceSample, Node, Pool
    from policy.models import PoolPolicy

    node = "sfo2-pcie-20"  # one no demo booking uses
    others = list(
        Node.objects.filter(pool__slug="pcie-batch").exclude(name=node).values_list("name", flat=True)
    )
    PoolPolicy.objects.update_or_create(
        pool=Pool.objects.get(slug="pcie-batch"),
        defaults={"lend_idle": True, "spot_notice": timedelta(minutes=10)},
    )
    ask = {"poolId": "pcie-batch", "devices": [{"class": "gpu", "count": 8}], "excludeNodes": others}
    owner = services.reserve({**ask, "tenantId": "acme", "duration": "20h"}).reservation
    assert owner.status == "placed", owner.conditions
    idle = {
        "type": IDLE,
        "status": "True",
        "reason": "LowUtilization",
        "message": "sfo2-pcie-20 GPU 0–7 at 0 % mean",
    }
    Reservation.objects.filter(pk=owner.pk).update(conditions=[idle])
    # Its GPUs run nothing now (the demo's samples may show processes there): they may be lent.
    DeviceSample.objects.filter(device__node__name=node).delete()
    work = services.reserve({**ask, "tenantId": "globex", "duration": "4h", "priority": "spot"}).reservation
    assert work.lent_from == [owner.pk], (work.status, work.conditions)

    page = login("acme")
    page.goto(f"{demo}/reservations/{owner.pk}/")
    page.get_by_role("button", name="Reclaim lent GPUs").click()
    expect(page.locator("#shared-until")).to_contain_text(
        "Lent GPUs reclaimed: shared with the spot work until"
    )
    expect(page.get_by_role("button", name="Reclaim lent GPUs")).to_have_count(0)
    assert Reservation.objects.get(pk=work.pk).status == "placed"
    folder = Path(os.environ.get("BERTH_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(folder / "reservation-reclaimed-notice.png"), full_page=True)
