"""TokenLifetime moves to the identity app (who holds a key is who-is-who): state only, the table
capacity_tokenlifetime and its rows stay; identity 0007 takes it over and moves its content type."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("capacity", "0045_move_policy_models"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name="TokenLifetime")],
            database_operations=[],
        ),
    ]
