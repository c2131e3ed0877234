"""The pool rules' pages: the approval queue (docs/policy.md, Approvals)."""

from django.urls import path

from . import views

urlpatterns = [
    path("approvals/", views.approvals, name="approvals"),
    path("approvals/<int:pk>/approve/", views.decide, {"decision": "approve"}, name="approval-approve"),
    path("approvals/<int:pk>/deny/", views.decide, {"decision": "deny"}, name="approval-deny"),
]
