"""The pool rules' pages: the approval queue (docs/policy.md, Approvals), the teams (docs/browser.md)
and the reservation page's reclaim of lent GPUs and its Keep when idle button."""

from django.urls import path

from . import teams, views

urlpatterns = [
    path("approvals/", views.approvals, name="approvals"),
    path("approvals/<int:pk>/approve/", views.decide, {"decision": "approve"}, name="approval-approve"),
    path("approvals/<int:pk>/deny/", views.decide, {"decision": "deny"}, name="approval-deny"),
    path("reservations/<int:pk>/reclaim/", views.reclaim, name="reservation-reclaim"),
    path("reservations/<int:pk>/keep-when-idle/", views.keep_when_idle, name="reservation-keep-when-idle"),
    path("teams/", teams.teams, name="teams"),
    path("teams/<slug:slug>/", teams.team, name="team"),
    path("teams/<slug:slug>/name/", teams.team_name, name="team-name"),
    path("teams/<slug:slug>/members/", teams.team_members, name="team-members"),
    path("teams/<slug:slug>/quotas/", teams.team_quotas, name="team-quotas"),
    path("teams/<slug:slug>/shares/", teams.team_shares, name="team-shares"),
]
