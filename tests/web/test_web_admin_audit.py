"""Teams, memberships and users changed in the admin are in the audit, with before and after."""

import pytest
from django.contrib.auth.models import User
from django.test import Client

from inventory.models import Tenant
from trail.models import AuditRecord


@pytest.fixture
def root(db):
    user = User.objects.create_superuser("root", password="pw-root-123")
    client = Client()
    client.force_login(user)
    return client


def _records():
    return [(r.actor, r.action, r.object, r.before, r.after) for r in AuditRecord.objects.order_by("id")]


def test_a_team_made_renamed_given_members_and_deleted_in_the_admin(root):
    alice = User.objects.create_user("alice")
    bob = User.objects.create_user("bob")
    answer = root.post("/admin/inventory/tenant/add/", {"slug": "lab3", "name": "Lab", "users": [alice.pk]})
    assert answer.status_code == 302, answer.content.decode()[:2000]
    team = Tenant.objects.get(slug="lab3")
    answer = root.post(
        f"/admin/inventory/tenant/{team.pk}/change/", {"slug": "lab3", "name": "Lab Three", "users": [bob.pk]}
    )
    assert answer.status_code == 302
    assert root.post(f"/admin/inventory/tenant/{team.pk}/delete/", {"post": "yes"}).status_code == 302
    assert _records() == [
        ("root", "team.create", "tenant:lab3", None, {"slug": "lab3", "name": "Lab"}),
        ("root", "membership.add", "membership:lab3/alice", None, {"tenant": "lab3", "user": "alice"}),
        ("root", "team.set", "tenant:lab3", {"name": "Lab"}, {"name": "Lab Three"}),
        ("root", "membership.add", "membership:lab3/bob", None, {"tenant": "lab3", "user": "bob"}),
        ("root", "membership.remove", "membership:lab3/alice", {"tenant": "lab3", "user": "alice"}, None),
        ("root", "team.delete", "tenant:lab3", {"slug": "lab3", "name": "Lab Three"}, None),
    ]


def test_a_user_made_in_the_admin_and_made_staff_is_in_the_audit_without_a_password(root):
    answer = root.post(
        "/admin/auth/user/add/",
        {
            "username": "carol",
            "usable_password": "true",
            "password1": "pw-carol-12345",
            "password2": "pw-carol-12345",
        },
    )
    assert answer.status_code == 302, answer.content.decode()[:3000]
    carol = User.objects.get(username="carol")
    form = {
        "username": "carol",
        "email": "carol@example.com",
        "is_active": "on",
        "is_staff": "on",
        "date_joined_0": "2026-01-01",
        "date_joined_1": "00:00:00",
        "initial-date_joined_0": "2026-01-01",
        "initial-date_joined_1": "00:00:00",
    }
    answer = root.post(f"/admin/auth/user/{carol.pk}/change/", form)
    assert answer.status_code == 302, answer.content.decode()[:3000]
    created, changed = _records()
    assert created[:3] == ("root", "user.create", "user:carol") and created[4]["is_staff"] is False
    assert changed == (
        "root",
        "user.set",
        "user:carol",
        {"email": "", "is_staff": False},
        {"email": "carol@example.com", "is_staff": True},
    )
    assert "password" not in str(_records())


def test_a_share_set_in_the_admin_for_a_team_without_a_gpu_quota_warns(root, two_hosts):
    from inventory.models import Pool

    from tenants import make_tenant

    bare = make_tenant("bare", default_quota=None)
    form = {
        "pool": Pool.objects.get(slug="lab-pool").pk,
        "tenant": bare.pk,
        "guaranteed_gpus": 2,
        "borrowing_limit_gpus": "",
        "lending_limit_gpus": "",
    }
    answer = root.post("/admin/policy/poolshare/add/", form, follow=True)
    assert (
        "No GPU quota for bare: its bookings are refused whatever its share says."
        " Set one on the team&#x27;s page, Teams → bare." in answer.content.decode()
    )


def test_a_group_made_renamed_and_deleted_in_the_admin_is_in_the_audit(root):
    from django.contrib.auth.models import Group, Permission

    perm = Permission.objects.get(codename="view_tenant")
    answer = root.post("/admin/auth/group/add/", {"name": "auditors", "permissions": [perm.pk]})
    assert answer.status_code == 302, answer.content.decode()[:2000]
    group = Group.objects.get(name="auditors")
    answer = root.post(f"/admin/auth/group/{group.pk}/change/", {"name": "readers", "permissions": [perm.pk]})
    assert answer.status_code == 302
    assert root.post(f"/admin/auth/group/{group.pk}/delete/", {"post": "yes"}).status_code == 302
    after = {"name": "auditors", "permissions": ["inventory.view_tenant"]}
    assert _records() == [
        ("root", "group.create", "group:auditors", None, after),
        ("root", "group.set", "group:readers", {"name": "auditors"}, {"name": "readers"}),
        ("root", "group.delete", "group:readers", {**after, "name": "readers"}, None),
    ]
