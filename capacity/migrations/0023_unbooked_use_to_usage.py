"""UnbookedUse moves to the usage app: state only, the table (and its webhooks trigger) stays."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("capacity", "0022_whatifrun_moves_to_whatif"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name="UnbookedUse")],
            database_operations=[],
        ),
    ]
