"""The whole-GPU equivalent of a device class: the usage report's and the shares' one rule."""

from fractions import Fraction

from django.db import connection

from inventory.gpu_share import gpu_share, gpu_share_sql

CLASSES = ["gpu", "mig-3g.40gb", "mig-1g.10gb+me", "mig-1c.3g.40gb", "mig-7g.80gb", "mig-odd"]


def test_a_mig_slice_is_its_compute_slices_over_seven_and_anything_else_one():
    assert [gpu_share(c) for c in CLASSES] == [
        1,
        Fraction(3, 7),
        Fraction(1, 7),
        Fraction(3, 7),
        1,
        Fraction(1, 7),
    ]


def test_the_sql_says_what_the_python_says(db):
    with connection.cursor() as cur:
        for device_class in CLASSES:
            cur.execute(f"SELECT {gpu_share_sql('%(c)s')}", {"c": device_class})
            assert Fraction(cur.fetchone()[0]).limit_denominator(7) == gpu_share(device_class), device_class
