"""The pool page's settings sections come from the apps that own them, through capacity's registry."""

from __future__ import annotations

from capacity.views.pool_sections import sections


def test_the_policy_app_gives_the_pool_page_its_shares_then_its_policy_section_and_slurm_its_own() -> None:
    """The page draws what the apps registered when ready, in INSTALLED_APPS order (the kept fragment's order)."""
    assert [s.name for s in sections()] == ["shares", "policy", "slurm"]
    assert [s.apply.__module__ for s in sections()] == [
        "policy.shares_section",
        "policy.policy_section",
        "slurm.section",
    ]
