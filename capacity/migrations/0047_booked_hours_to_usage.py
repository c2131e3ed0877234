"""The booked hours' four models move to the usage app: state only, the tables and their triggers stay."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("capacity", "0046_move_token_models"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(name="BookedHours"),
                migrations.DeleteModel(name="BookedHoursChange"),
                migrations.DeleteModel(name="BookedPoints"),
                migrations.DeleteModel(name="BookedPointsChange"),
            ],
            database_operations=[],
        ),
    ]
