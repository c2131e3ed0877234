"""config imports no app: the apps answer its questions and register their errors into it."""

import pytest
from django.core.exceptions import ImproperlyConfigured

from capacity import access as rules
from capacity.services.release import release
from config import access, actions
from config.api.exceptions import classify
from identity.tokens import token_refusal
from inventory.errors import FilterError, IngestError


def test_capacity_answers_every_question_configs_bases_ask():
    assert access._answers == {
        "is_operator": rules.is_operator,
        "scope_for": rules.scope_for,
        "view_refusal": rules.view_refusal,
        "token_refusal": token_refusal,
        "who_sql": rules.who_sql,
        "remember_who": rules.remember_who,
    }


def test_a_question_no_app_answers_is_refused_rather_than_guessed(monkeypatch):
    monkeypatch.delitem(access._answers, "is_operator")
    with pytest.raises(
        ImproperlyConfigured, match=r"no installed app answers config\.access's 'is_operator'"
    ):
        access.is_operator(None)


def test_an_answer_to_a_question_config_does_not_ask_is_refused():
    with pytest.raises(ImproperlyConfigured, match=r"config\.access asks no may_fly"):
        access.register(may_fly=lambda user: True)


def test_capacity_does_the_release_usage_asks_for_without_importing_it():
    assert actions._doers == {"release": release}


def test_an_action_no_app_does_is_refused_rather_than_skipped(monkeypatch):
    monkeypatch.delitem(actions._doers, "release")
    with pytest.raises(ImproperlyConfigured, match=r"no installed app does config\.actions's 'release'"):
        actions.release(1, reason="idle")


def test_a_doer_of_an_action_config_does_not_name_is_refused():
    with pytest.raises(ImproperlyConfigured, match=r"config\.actions has no fly"):
        actions.register(fly=lambda: None)


def test_inventorys_errors_answer_with_the_codes_it_registered():
    assert classify(IngestError("devices: another node's", "CONFLICT")) == (
        "CONFLICT",
        "devices: another node's",
        409,
    )
    assert classify(FilterError("state", "state: not one of ready")) == (
        "INVALID_INPUT",
        "state: not one of ready",
        400,
    )
