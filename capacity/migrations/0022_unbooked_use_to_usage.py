"""UnbookedUse moves to the usage app: state only, the table (and its webhooks trigger) stays."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("capacity", "0021_reservation_changed_never_before_created"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name="UnbookedUse")],
            database_operations=[],
        ),
    ]
