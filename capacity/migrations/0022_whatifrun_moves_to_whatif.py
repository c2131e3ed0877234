"""What-if runs move to the whatif app: capacity forgets the model, the table and its rows stay.

State only (no SQL): whatif's 0001_initial takes the model over on the same table,
`capacity_whatifrun`, and depends on this migration; capacity knows nothing of whatif.
Reversed, capacity knows the model again and the table is as it was.
"""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("capacity", "0021_reservation_changed_never_before_created"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name="WhatIfRun")],
            database_operations=[],
        ),
    ]
