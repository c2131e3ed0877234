"""How much of a GPU a device class is: one rule for the usage report and the pools' shares.

A MIG slice counts as its share of its GPU: its compute slices over the GPU's seven (mig-3g.40gb
is 3/7, a compute instance mig-1c.3g.40gb of its GPU instance 3g the same); anything else is one.
"""

from __future__ import annotations

import re
from fractions import Fraction

MIG_SLICES_PER_GPU = 7
_SLICES = re.compile(r"mig-(?:[0-9]+c[.])?([0-9]+)g")


def gpu_share(device_class: str) -> Fraction:
    """Return the whole-GPU equivalent of one device of this class."""
    if not device_class.startswith("mig-"):
        return Fraction(1)
    found = _SLICES.match(device_class)
    return Fraction(int(found.group(1)) if found else 1, MIG_SLICES_PER_GPU)


def gpu_share_sql(column: str) -> str:
    """Return the SQL expression of gpu_share over a device-class column (%% as psycopg wants)."""
    return (
        f"CASE WHEN {column} LIKE 'mig-%%'"
        f" THEN coalesce(substring({column} from 'mig-(?:[0-9]+c[.])?([0-9]+)g')::numeric, 1)"
        f" / {MIG_SLICES_PER_GPU} ELSE 1 END"
    )
