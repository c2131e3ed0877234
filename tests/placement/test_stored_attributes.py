"""Selectors and the satisfiability check read any stored attribute without raising."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from capacity.placement import Expression, matches, plan_placement
from capacity.placement.satisfiable import kinds, pool_facts, unsatisfiable
from capacity.placement.selectors import as_number, as_text

from .builders import POOL, gpu, gpus, node, request

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
OPS = [
    ("In", ("80",)),
    ("NotIn", ("80",)),
    ("Exists", ()),
    ("DoesNotExist", ()),
    ("Gte", (24,)),
    ("Lt", (1e300,)),
]


@given(value=JSON | st.sampled_from([10**400, -(10**400), 10**4000]))
def test_every_operator_answers_on_any_stored_value(value):
    atom = gpu("n1", 0, vramGiB=value)
    for op, values in OPS:
        assert matches(Expression("vramGiB", op, values), atom, node("n1", [atom])) in (True, False)


@pytest.mark.parametrize("value", [{"a": 1}, [80], None, 10**400, float("inf"), float("nan")])
def test_a_value_that_is_no_scalar_reads_as_absent(value):
    atom = gpu("n1", 0, vramGiB=value)
    view = node("n1", [atom], labels={"vramGiB": "80"})
    # The attribute is absent, so the node's label answers, as for any missing attribute.
    assert matches(Expression("vramGiB", "In", ("80",)), atom, view)
    assert not matches(Expression("vramGiB", "Exists"), atom, node("n1", [atom]))


def test_numbers_past_a_float_or_int_str_limit_are_no_numbers():
    assert as_number(10**400) is None
    assert as_number("9" * 5000) is None
    assert as_text(10**4000).startswith("1000")


def test_the_satisfiability_check_groups_nodes_holding_objects_and_lists():
    views = [
        node("n1", [gpu("n1", 0, vramGiB={"a": 1})]),
        node("n2", [gpu("n2", 0, vramGiB=[1, 2])]),
        node("n3", [gpu("n3", 0, vramGiB=True)]),
        node("n4", [gpu("n4", 0, vramGiB=1)]),
    ]
    grouped = kinds(views)
    # Objects and lists read as absent (one kind); true and 1 are not the same value.
    assert sorted(len(g) for g in grouped) == [1, 1, 2]
    big = request(gpus(1, selector=(Expression("vramGiB", "Gte", (24,)),)))
    never = unsatisfiable(
        big,
        pool_facts(views),
        "lab",
        plan_empty=lambda nodes: plan_placement(big, nodes, POOL),
        grouped=grouped,
    )
    assert never is not None and never.field == "request"
