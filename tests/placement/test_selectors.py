"""Selector expressions: matching, and the shorthand parser and printer."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from capacity.placement import (
    Atom,
    CapacityError,
    Expression,
    NodeView,
    format_selector,
    matches,
    parse_selector,
    selector_matches,
)
from capacity.placement.selectors import MAX_EXPRESSIONS, MAX_VALUES, check_selector

ATOM = Atom(
    "GPU-0",
    "gpu",
    attributes={
        "gpuProduct": "H100-SXM5-80GB",
        "vramGiB": 80,
        "computeCapability": "9.0",
        "migCapable": True,
        "tdpWatts": 700.0,
        "serial": "n/a",
    },
)
NODE = NodeView(
    "n1",
    "pool-1",
    labels={"gpu.product": "H100", "mig.capable": "true", "cuda.driver.major": "535", "gpuProduct": "A100"},
)


def holds(key: str, op: str, *values: str | int | float) -> bool:
    return matches(Expression(key, op, values), ATOM, NODE)


class TestMatching:
    def test_in_and_notin_compare_as_strings(self) -> None:
        assert holds("gpuProduct", "In", "A100", "H100-SXM5-80GB")
        assert not holds("gpuProduct", "NotIn", "H100-SXM5-80GB")
        assert holds("vramGiB", "In", "80")
        assert holds("vramGiB", "In", 80)
        assert holds("tdpWatts", "In", "700")
        assert holds("vramGiB", "NotIn", "40", "24")

    def test_booleans_compare_as_lowercase_true_and_false(self) -> None:
        assert holds("migCapable", "In", "true")
        assert not holds("migCapable", "In", "True")
        assert holds("mig.capable", "In", "true")
        assert holds("migCapable", "NotIn", "false")

    def test_the_device_attribute_is_read_before_the_node_label(self) -> None:
        assert holds("gpuProduct", "In", "H100-SXM5-80GB")
        assert not holds("gpuProduct", "In", "A100")

    def test_a_key_the_device_lacks_falls_back_to_the_node_label(self) -> None:
        assert holds("gpu.product", "In", "H100")
        assert holds("cuda.driver.major", "Gte", 535)

    def test_exists_and_doesnotexist(self) -> None:
        assert holds("vramGiB", "Exists")
        assert holds("mig.capable", "Exists")
        assert not holds("fabric.domain", "Exists")
        assert holds("fabric.domain", "DoesNotExist")
        assert not holds("vramGiB", "DoesNotExist")

    def test_a_false_attribute_still_exists(self) -> None:
        atom = Atom("GPU-1", "gpu", attributes={"migCapable": False})
        assert matches(Expression("migCapable", "Exists"), atom, NODE)
        assert matches(Expression("migCapable", "In", ("false",)), atom, NODE)

    def test_missing_keys_follow_kubernetes_semantics(self) -> None:
        assert not holds("fabric.domain", "In", "a")
        assert holds("fabric.domain", "NotIn", "a")
        for op in ("Gt", "Gte", "Lt", "Lte"):
            assert not holds("fabric.domain", op, 1)

    @pytest.mark.parametrize(
        ("op", "value", "expected"),
        [
            ("Gt", 79, True),
            ("Gt", 80, False),
            ("Gte", 80, True),
            ("Gte", 80.5, False),
            ("Lt", 81, True),
            ("Lt", 80, False),
            ("Lte", 80, True),
            ("Lte", 79.9, False),
        ],
    )
    def test_comparisons_are_numeric(self, op: str, value: float, expected: bool) -> None:
        assert holds("vramGiB", op, value) is expected

    def test_numeric_strings_on_either_side_are_numbers(self) -> None:
        assert holds("computeCapability", "Gte", 8.9)
        assert holds("vramGiB", "Gt", "79")
        assert holds("cuda.driver.major", "Lt", "600")

    def test_a_value_that_is_not_a_number_never_matches_a_comparison(self) -> None:
        for op in ("Gt", "Gte", "Lt", "Lte"):
            assert not holds("serial", op, 1)
            assert not holds("vramGiB", op, "lots")
            assert not holds("migCapable", op, 0)
            assert not holds("gpuProduct", op, 0)

    def test_selector_matches_needs_every_expression(self) -> None:
        selector = (Expression("gpuProduct", "In", ("H100-SXM5-80GB",)), Expression("vramGiB", "Gte", (80,)))
        assert selector_matches(selector, ATOM, NODE)
        assert not selector_matches((*selector, Expression("fabric.domain", "Exists")), ATOM, NODE)
        assert selector_matches((), ATOM, NODE)

    def test_an_unknown_operator_is_invalid_input(self) -> None:
        with pytest.raises(CapacityError) as info:
            holds("vramGiB", "Near", 80)
        assert info.value.code == "INVALID_INPUT"


class TestShorthand:
    def test_parses_the_spec_example(self) -> None:
        assert parse_selector(
            "gpuProduct in (H100-SXM5-80GB), vramGiB >= 80, mig.capable = true, fabric.domain"
        ) == (
            Expression("gpuProduct", "In", ("H100-SXM5-80GB",)),
            Expression("vramGiB", "Gte", (80,)),
            Expression("mig.capable", "In", ("true",)),
            Expression("fabric.domain", "Exists"),
        )

    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            ("a in (x, y)", Expression("a", "In", ("x", "y"))),
            ("a notin (x,y)", Expression("a", "NotIn", ("x", "y"))),
            ("a NotIn(x)", Expression("a", "NotIn", ("x",))),
            ("a = x", Expression("a", "In", ("x",))),
            ("a != x", Expression("a", "NotIn", ("x",))),
            ("a > 3", Expression("a", "Gt", (3,))),
            ("a >= 3.5", Expression("a", "Gte", (3.5,))),
            ("a < -2", Expression("a", "Lt", (-2,))),
            ("a <= 1e3", Expression("a", "Lte", (1000.0,))),
            ("a", Expression("a", "Exists")),
            ("!a", Expression("a", "DoesNotExist")),
            ("! a", Expression("a", "DoesNotExist")),
            ('a = "two words"', Expression("a", "In", ("two words",))),
            ('a in ("x, y", "q\\"uote")', Expression("a", "In", ("x, y", 'q"uote'))),
            ("in in (in)", Expression("in", "In", ("in",))),
        ],
    )
    def test_parses_each_form(self, text: str, expected: Expression) -> None:
        assert parse_selector(text) == (expected,)

    def test_is_whitespace_tolerant_and_commas_in_parentheses_belong_to_the_set(self) -> None:
        assert parse_selector("  a   in(  x ,y  ) ,b>=2,!c  ,d  ") == (
            Expression("a", "In", ("x", "y")),
            Expression("b", "Gte", (2,)),
            Expression("c", "DoesNotExist"),
            Expression("d", "Exists"),
        )

    def test_an_empty_shorthand_is_an_empty_selector(self) -> None:
        assert parse_selector("") == ()
        assert parse_selector("   ") == ()
        assert format_selector(()) == ""

    def test_formats_each_form(self) -> None:
        exprs = (
            Expression("a", "In", ("x",)),
            Expression("a", "In", ("x", "y")),
            Expression("b", "NotIn", ("x",)),
            Expression("b", "NotIn", ("x", "y")),
            Expression("c", "Gt", (1,)),
            Expression("c", "Gte", (1.5,)),
            Expression("c", "Lt", (2,)),
            Expression("c", "Lte", (2,)),
            Expression("d", "Exists"),
            Expression("e", "DoesNotExist"),
            Expression("f", "In", ("two words", "")),
        )
        assert format_selector(exprs) == (
            'a = x, a in (x, y), b != x, b notin (x, y), c > 1, c >= 1.5, c < 2, c <= 2, d, !e, f in ("two words", "")'
        )

    @pytest.mark.parametrize(
        ("text", "message"),
        [
            ("1abc", "selector: expected a key at position 1"),
            ("a in ()", "selector: 'in' needs at least one value at position 7"),
            ("a in (x", "selector: expected ',' or ')' at position 8"),
            ("a in x", "selector: expected '(' at position 6"),
            ("a > big", "selector: expected a number after '>' at position 5"),
            ("a >= 1e999", "selector: expected a number after '>=' at position 6"),
            ("a = ", "selector: expected a value at position 5"),
            (
                "a = x y",
                "selector: unexpected 'y', expected ',' at position 7; "
                'a value with spaces is written in double quotes: "x y"',
            ),
            ("a,", "selector: expected a key at position 3"),
            ("a ~ b", "selector: unexpected '~' after key 'a' at position 3"),
            ('a = "open', "selector: unterminated quoted value at position 5"),
        ],
    )
    def test_malformed_shorthand_is_invalid_input_naming_the_problem(self, text: str, message: str) -> None:
        with pytest.raises(CapacityError) as info:
            parse_selector(text)
        assert info.value.code == "INVALID_INPUT"
        assert info.value.message == message

    def test_the_limits_apply_to_the_shorthand(self) -> None:
        with pytest.raises(CapacityError, match="at most 32 expressions"):
            parse_selector(", ".join(f"k{i}" for i in range(MAX_EXPRESSIONS + 1)))
        assert len(parse_selector(", ".join(f"k{i}" for i in range(MAX_EXPRESSIONS)))) == MAX_EXPRESSIONS
        values = ", ".join(f"v{i}" for i in range(MAX_VALUES + 1))
        with pytest.raises(CapacityError, match="at most 64 values"):
            parse_selector(f"k in ({values})")

    def test_the_field_name_prefixes_errors(self) -> None:
        with pytest.raises(CapacityError, match=r"^devices\[0\]\.selector: expected a key"):
            parse_selector("?", "devices[0].selector")


KEYS = st.from_regex(r"\A[A-Za-z][A-Za-z0-9._/-]{0,20}\Z")
TEXTS = st.text(max_size=12)
NUMBERS = st.one_of(st.integers(), st.floats(allow_nan=False, allow_infinity=False))
EXPRESSIONS = st.one_of(
    st.builds(
        Expression, KEYS, st.sampled_from(["In", "NotIn"]), st.lists(TEXTS, min_size=1, max_size=5).map(tuple)
    ),
    st.builds(Expression, KEYS, st.sampled_from(["Gt", "Gte", "Lt", "Lte"]), NUMBERS.map(lambda n: (n,))),
    st.builds(Expression, KEYS, st.sampled_from(["Exists", "DoesNotExist"])),
)


@given(st.lists(EXPRESSIONS, max_size=MAX_EXPRESSIONS).map(tuple))
def test_format_then_parse_gives_back_any_valid_selector(selector: tuple[Expression, ...]) -> None:
    assert check_selector(selector) == selector
    assert parse_selector(format_selector(selector)) == selector


@given(st.lists(EXPRESSIONS, max_size=8).map(tuple))
def test_parse_then_format_is_stable(selector: tuple[Expression, ...]) -> None:
    text = format_selector(selector)
    assert format_selector(parse_selector(text)) == text


@pytest.mark.parametrize(
    ("text", "position"),
    [("gpuProduct = NVIDIA H100 80GB HBM3", 21), ("gpuProduct in (NVIDIA H100 80GB HBM3, A100)", 23)],
)
def test_a_value_with_spaces_is_refused_with_the_quoted_form_to_send(text, position):
    with pytest.raises(CapacityError) as refused:
        parse_selector(text)
    assert refused.value.message.endswith(
        f'at position {position}; a value with spaces is written in double quotes: "NVIDIA H100 80GB HBM3"'
    )
    assert parse_selector('gpuProduct = "NVIDIA H100 80GB HBM3"')[0].values == ("NVIDIA H100 80GB HBM3",)
