"""The pool page's Slurm section: operators bridge the pool and map a tenant's account; a bad account is named."""

from __future__ import annotations

import re

from django.test import Client

from slurm.models import BridgedPool, SlurmAccount


def _operator_client(operator):
    client = Client()
    client.force_login(operator)
    return client


def test_an_operator_bridges_the_pool_and_maps_an_account_from_the_page(pool, tenant, operator):
    client = _operator_client(operator)
    page = client.get("/pools/lab-pool/")
    assert (
        'id="slurm"' in page.content.decode()
        and "not bridged: bookings stay in Berth" in page.content.decode()
    )
    sent = client.post(
        "/pools/lab-pool/slurm/",
        {
            "slurm-bridged": "on",
            "slurm-wholeNodesOnly": "on",
            "slurm-tenant": "acme",
            "slurm-account": "proj-acme",
        },
        HTTP_HX_REQUEST="true",
    )
    assert sent.status_code == 200 and "<code>proj-acme</code>" in sent.content.decode()
    assert re.search(r'<input[^>]*name="slurm-wholeNodesOnly"[^>]*checked', sent.content.decode())
    assert "refused: whole nodes only" in sent.content.decode()
    assert BridgedPool.objects.get().enabled and SlurmAccount.objects.get().account == "proj-acme"
    assert "Slurm not reached yet" in client.get("/pools/lab-pool/").content.decode()

    bad = client.post(
        "/pools/lab-pool/slurm/",
        {"slurm-bridged": "on", "slurm-tenant": "acme", "slurm-account": "Proj Acme"},
        HTTP_HX_REQUEST="true",
    )
    assert "account must be a Slurm account" in bad.content.decode()
    assert SlurmAccount.objects.get().account == "proj-acme"


def test_a_tenant_may_not_set_the_bridge(pool, tenant, acme_user):
    client = Client()
    client.force_login(acme_user)
    assert client.post("/pools/lab-pool/slurm/", {"slurm-bridged": "on"}).status_code in (403, 404)
    assert not BridgedPool.objects.exists()
