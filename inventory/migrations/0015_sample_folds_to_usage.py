"""The hourly fold and its progress row move to the usage app: state only, the tables stay."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("inventory", "0014_device_verified_node_refusal"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(name="DeviceSampleHour"),
                migrations.DeleteModel(name="SampleFold"),
            ],
            database_operations=[],
        ),
    ]
