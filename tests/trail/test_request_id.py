"""Every answer carries a request id: the caller's when well-formed and short, else a new one."""

import pytest

from trail.middleware import request_id_of


@pytest.mark.parametrize("given", ["3f2a9c4e-1b7d-4c1e-9a8f-2b6c1d0e9f7a", "req-42", "01HZX3K7:a.b_c"])
def test_a_well_formed_incoming_id_is_kept(given):
    assert request_id_of(given) == given


@pytest.mark.parametrize("given", [None, "", "x" * 65, "has space", "new\nline", "-starts-with-dash", "ü"])
def test_a_missing_malformed_or_long_id_is_replaced_by_a_new_one(given):
    made = request_id_of(given)
    assert made != given and len(made) == 32 and made.isalnum()


def test_the_answer_names_the_callers_id_or_a_new_one(client, db):
    kept = client.get("/accounts/login/", headers={"X-Request-Id": "req-42"})
    assert kept["X-Request-Id"] == "req-42"
    made = client.get("/accounts/login/", headers={"X-Request-Id": "bad id"})
    assert made["X-Request-Id"] not in ("bad id", "") and len(made["X-Request-Id"]) == 32
    assert client.get("/accounts/login/")["X-Request-Id"] != made["X-Request-Id"]


def test_an_api_error_answer_carries_the_request_id_too(client, db):
    answer = client.get("/api/v1/audit", headers={"X-Request-Id": "req-err"})
    assert answer.status_code == 401 and answer["X-Request-Id"] == "req-err"
