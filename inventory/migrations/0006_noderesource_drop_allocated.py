"""Scalar claims move to capacity's time-indexed ScalarClaim rows: drop the all-time counter.

A counter cannot say what is claimed at a given time (next month's claim made the node refuse
today), so room is now computed from the claims overlapping the window asked for.
"""

from django.db import migrations

FORWARD = "DROP INDEX IF EXISTS noderesource_room;"
BACKWARD = """
CREATE INDEX noderesource_room ON inventory_noderesource
  (resource, (floor(allocatable * ratio + 1e-9) - allocated));
"""


class Migration(migrations.Migration):
    dependencies = [("inventory", "0005_noderesource_room")]
    operations = [
        migrations.RunSQL(FORWARD, BACKWARD),
        migrations.RemoveConstraint(model_name="noderesource", name="noderesource_allocated_nonnegative"),
        migrations.RemoveField(model_name="noderesource", name="allocated"),
    ]
