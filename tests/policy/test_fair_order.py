"""The fair queue's order and words: lowest fair share first, none last, oldest first among equals."""

import random

import pytest

from policy.fair_order import (
    Place,
    Waiting,
    fair_order,
    lately,
    ordinal,
    place_words,
    places,
    queue_key,
)


def pks(waiting):
    return [w.pk for w in waiting]


def test_the_tenant_with_the_lowest_fair_share_goes_first_and_its_oldest_first():
    waiting = [
        Waiting(1, "acme", 10),
        Waiting(2, "globex", 20),
        Waiting(3, "acme", 5),
        Waiting(4, "globex", 1),
    ]
    assert pks(fair_order(waiting, {"acme": 1.3, "globex": 0.2})) == [4, 2, 3, 1]


def test_a_tenant_without_a_figure_comes_after_every_tenant_with_one():
    waiting = [
        Waiting(1, "initech", 0),
        Waiting(2, "acme", 50),
        Waiting(3, "zero", 1),
        Waiting(4, "globex", 60),
    ]
    # initech has no row at all, zero a guarantee of 0: neither has a figure, so both go last, oldest first.
    assert pks(fair_order(waiting, {"acme": 9.0, "globex": 0.0, "zero": None})) == [4, 2, 1, 3]


def test_equal_figures_go_oldest_request_first_across_tenants():
    waiting = [Waiting(1, "acme", 3), Waiting(2, "globex", 1), Waiting(3, "acme", 2), Waiting(4, "globex", 4)]
    assert pks(fair_order(waiting, {"acme": 0.5, "globex": 0.5})) == [2, 3, 1, 4]
    assert pks(fair_order(waiting, {})) == [2, 3, 1, 4]  # no figures at all: first come, first tried


def test_the_same_instant_goes_by_key():
    waiting = [Waiting(9, "acme", 1), Waiting(3, "acme", 1)]
    assert pks(fair_order(waiting, {"acme": 1.0})) == [3, 9]


def test_the_order_is_the_sort_by_queue_key_whatever_the_input_order():
    rng = random.Random(7)
    tenants = {f"t{i}": rng.choice([None, 0.0, 0.5, 1.0, rng.random() * 3]) for i in range(6)}
    waiting = [Waiting(pk, rng.choice([*tenants, "nobody"]), rng.randrange(50)) for pk in range(200)]
    expected = fair_order(waiting, tenants)
    for _ in range(5):
        rng.shuffle(waiting)
        assert fair_order(waiting, tenants) == expected
    keys = [queue_key(tenants.get(w.tenant), w.created, w.pk) for w in expected]
    assert keys == sorted(keys)
    mine = [w for w in expected if w.tenant == "t0"]
    assert [w.created for w in mine] == sorted(w.created for w in mine)


def test_places_are_one_based_out_of_the_whole_queue_with_the_tenants_figure():
    waiting = [Waiting(1, "acme", 1), Waiting(2, "globex", 2), Waiting(3, "initech", 0)]
    assert places(waiting, {"acme": 1.25, "globex": 0.5}) == {
        2: Place(1, 3, 0.5),
        1: Place(2, 3, 1.25),
        3: Place(3, 3, None),
    }
    assert places([], {"acme": 1.0}) == {}


@pytest.mark.parametrize(
    ("n", "text"),
    [
        (1, "1st"),
        (2, "2nd"),
        (3, "3rd"),
        (4, "4th"),
        (10, "10th"),
        (11, "11th"),
        (12, "12th"),
        (13, "13th"),
        (21, "21st"),
        (22, "22nd"),
        (23, "23rd"),
        (101, "101st"),
        (111, "111th"),
        (112, "112th"),
        (1000, "1000th"),
    ],
)
def test_ordinals_take_their_english_suffix(n, text):
    assert ordinal(n) == text


def test_the_words_say_the_place_the_pool_and_the_teams_use_of_its_share():
    assert (
        place_words(Place(3, 11, 1.26), "h100-prod", 168)
        == "3rd of 11 in h100-prod; your team used 1.3× its share this week"
    )
    assert (
        place_words(Place(3, 11, None), "h100-prod", 168)
        == "3rd of 11 in h100-prod; your team has no guaranteed share here"
    )
    assert (
        place_words(Place(1, 1, 0.0), "lab", 168, who="acme")
        == "1st of 1 in lab; acme used 0.0× its share this week"
    )


def test_the_span_follows_the_half_life():
    assert [lately(h) for h in (168, 24, 72, 36)] == ["this week", "today", "these 3 days", "these 36 hours"]
