"""Every admin changelist, add page and change page renders for a superuser."""

import pytest
from django.contrib import admin
from django.contrib.auth.models import User
from django.urls import reverse

from devtools.demo import build_demo

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def demo(module_rows):
    """Build the demo once for the module: every test reads it, and what one changes rolls back."""
    with module_rows.unblock():
        build_demo()


@pytest.fixture
def superuser_client(demo, client):
    client.force_login(User.objects.create_superuser("root", "root@example.com", "pw"))
    return client


MODELS = [m for m in admin.site._registry if m._meta.app_label in {"inventory", "capacity", "policy", "auth"}]


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m._meta.label)
def test_admin_pages_render(superuser_client, model):
    opts = model._meta
    changelist = superuser_client.get(reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist"))
    assert changelist.status_code == 200
    search = superuser_client.get(reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist"), {"q": "a"})
    assert search.status_code == 200
    obj = model.objects.order_by("pk").first()
    assert obj is not None, f"the demo holds no {opts.label}"
    change = superuser_client.get(reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[obj.pk]))
    assert change.status_code == 200
    if admin.site._registry[model].has_add_permission(change.wsgi_request):
        add = superuser_client.get(reverse(f"admin:{opts.app_label}_{opts.model_name}_add"))
        assert add.status_code == 200


def test_maintained_fields_are_read_only(superuser_client):
    from capacity.models import PoolCapacityRollup
    from inventory.models import Node, NodeResource

    node = Node.objects.get(name="ams1-dgx-12")
    page = superuser_client.get(reverse("admin:inventory_node_change", args=[node.pk])).content.decode()
    assert "dedicated=acme" in page
    assert 'name="no_schedule_reasons"' not in page
    resource = NodeResource.objects.first()
    page = superuser_client.get(
        reverse("admin:inventory_noderesource_change", args=[resource.pk])
    ).content.decode()
    assert 'name="allocated"' not in page
    rollup = PoolCapacityRollup.objects.first()
    page = superuser_client.get(
        reverse("admin:capacity_poolcapacityrollup_change", args=[rollup.pk])
    ).content.decode()
    assert 'name="allocated"' not in page


def test_a_nodes_admin_history_lists_its_changes_with_their_reasons(superuser_client):
    from inventory import services as inventory
    from inventory.models import Node

    node = Node.objects.order_by("pk").first()
    inventory.uncordon(node)
    inventory.cordon(node, reason="bad fan")
    page = superuser_client.get(reverse("admin:inventory_node_history", args=[node.pk]))
    assert page.status_code == 200
    assert "bad fan" in page.text


@pytest.mark.parametrize(
    "name", ["reservation", "allocation", "devicebooking", "quotacharge", "scalarclaim", "poolcapacityrollup"]
)
def test_what_the_placer_and_quota_keep_cannot_be_added_changed_or_deleted_in_the_admin(
    superuser_client, name
):
    """An admin row would bypass the placer, quota and release: only viewing is offered."""
    from django.apps import apps

    model = apps.get_model("capacity", name)
    obj = model.objects.order_by("pk").first()
    assert superuser_client.get(reverse(f"admin:capacity_{name}_add")).status_code == 403
    changelist = superuser_client.get(reverse(f"admin:capacity_{name}_changelist")).content.decode()
    assert f'href="{reverse(f"admin:capacity_{name}_add")}"' not in changelist
    change = superuser_client.get(reverse(f"admin:capacity_{name}_change", args=[obj.pk])).content.decode()
    assert 'type="submit"' not in change or 'name="_save"' not in change
    assert (
        superuser_client.post(
            reverse(f"admin:capacity_{name}_delete", args=[obj.pk]), {"post": "yes"}
        ).status_code
        == 403
    )
    assert model.objects.filter(pk=obj.pk).exists()
