"""The typed attribute table, and the docs' copy of it."""

from pathlib import Path

import pytest

from inventory.attributes import ATTRIBUTES, AttributeProblem, check_attributes

DOCS = (Path(__file__).parents[2] / "docs" / "api.md").read_text()


def test_the_docs_table_lists_every_typed_key_with_its_type():
    section = DOCS.split("## Device attributes", 1)[1].split("\n## ", 1)[0]
    for key, spec in ATTRIBUTES.items():
        assert f"| `{key}` | {spec.kind} |" in section, key


@pytest.mark.parametrize("value", ["r7", "", 0, -1.5, 2**53 - 1, True])
def test_an_unknown_key_keeps_any_scalar_within_bounds(value):
    assert check_attributes({"rack": value}) == {"rack": value}


@pytest.mark.parametrize("value", [{}, [], None, 2**53, float("inf"), "a\tb", "\u200f"])
def test_an_unknown_key_refuses_anything_else(value):
    with pytest.raises(AttributeProblem) as refused:
        check_attributes({"rack": value})
    assert refused.value.field == "attributes.rack"
