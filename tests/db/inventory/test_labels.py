"""Label keys follow the selector key syntax, in forms and in the database."""

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from inventory.models import NodeLabel
from inventory.validators import validate_label_key


@pytest.mark.parametrize(
    "key", ["rack", "gpu.product", "bc.dev/driver.nvidia", "fabric.domain", "a-b_c/d.e9"]
)
def test_valid_label_keys_pass(key):
    validate_label_key(key)


@pytest.mark.parametrize("key", ["", "9rack", "-rack", "rack name", "rack=1", "räck", "a" * 254, "/x"])
def test_invalid_label_keys_are_refused(key):
    with pytest.raises(ValidationError) as err:
        validate_label_key(key)
    assert err.value.messages == [
        "Label keys start with a letter and contain only letters, digits, '.', '_', '/' and '-'."
    ]


def test_full_clean_refuses_a_bad_key(make_node):
    label = NodeLabel(node=make_node(), key="1bad", value="x")
    with pytest.raises(ValidationError) as err:
        label.full_clean()
    assert "key" in err.value.message_dict


def test_the_database_refuses_a_bad_key_written_around_the_model(make_node):
    node = make_node()
    with pytest.raises(IntegrityError), transaction.atomic():
        NodeLabel.objects.bulk_create([NodeLabel(node=node, key="bad key", value="x")])
    assert not NodeLabel.objects.exists()
