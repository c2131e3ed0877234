"""The usage app takes over the booked hours' four models with their tables and rows: state only.

capacity 0047 removes them from capacity's state; here they enter usage's, on the tables they always
had (their triggers, capacity 0035, 0038 and 0041, stay). Their content types follow them, so
permissions and admin history keep pointing at the same models.
"""

from django.db import migrations, models

MODELS = ("bookedhours", "bookedhourschange", "bookedpoints", "bookedpointschange")


def _relabel(apps, old: str, new: str) -> None:
    content_type = apps.get_model("contenttypes", "ContentType")
    for model in MODELS:
        if not content_type.objects.filter(app_label=new, model=model).exists():
            content_type.objects.filter(app_label=old, model=model).update(app_label=new)


def to_usage(apps, schema_editor):
    _relabel(apps, "capacity", "usage")


def to_capacity(apps, schema_editor):
    _relabel(apps, "usage", "capacity")


class Migration(migrations.Migration):
    dependencies = [
        ("usage", "0001_initial"),
        ("capacity", "0047_booked_hours_to_usage"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.CreateModel(
                    name="BookedHours",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("tenant_id", models.BigIntegerField()),
                        ("pool_id", models.BigIntegerField()),
                        (
                            "gpu_model",
                            models.CharField(
                                help_text="The device's productName, else its class.", max_length=200
                            ),
                        ),
                        ("day", models.DateField(help_text="The UTC day.")),
                        (
                            "booked",
                            models.BigIntegerField(help_text="GPU-hours booked × GPU_HOUR (every layer)."),
                        ),
                        (
                            "lent",
                            models.BigIntegerField(
                                help_text="Of booked, the hours on lent GPUs (layer 1) × GPU_HOUR."
                            ),
                        ),
                    ],
                    options={
                        "db_table": "capacity_bookedhours",
                        "constraints": [
                            models.UniqueConstraint(
                                fields=("day", "tenant_id", "pool_id", "gpu_model"),
                                name="bookedhours_unique",
                                violation_error_message="The tenant already has booked hours for this pool, model and day.",
                            )
                        ],
                    },
                ),
                migrations.CreateModel(
                    name="BookedHoursChange",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("tenant_id", models.BigIntegerField()),
                        ("pool_id", models.BigIntegerField()),
                        ("gpu_model", models.CharField(max_length=200)),
                        ("day", models.DateField()),
                        ("booked", models.BigIntegerField()),
                        ("lent", models.BigIntegerField()),
                    ],
                    options={
                        "db_table": "capacity_bookedhourschange",
                        "indexes": [models.Index(fields=["day"], name="bookedhourschange_day_idx")],
                    },
                ),
                migrations.CreateModel(
                    name="BookedPoints",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("tenant_id", models.BigIntegerField()),
                        ("pool_id", models.BigIntegerField()),
                        ("gpu_model", models.CharField(max_length=200)),
                        ("day", models.DateField(help_text="The UTC day.")),
                        (
                            "hour",
                            models.SmallIntegerField(
                                help_text="The points' hour since the day's midnight (UTC), 0 to 24."
                            ),
                        ),
                        (
                            "share",
                            models.BigIntegerField(help_text="Σ sign × sevenths of a GPU: ends +, starts −."),
                        ),
                        (
                            "moment",
                            models.BigIntegerField(
                                help_text="Σ sign × sevenths × µs since midnight (GPU_HOUR units)."
                            ),
                        ),
                        (
                            "lent_share",
                            models.BigIntegerField(help_text="share, of the points on lent GPUs (layer 1)."),
                        ),
                        (
                            "lent_moment",
                            models.BigIntegerField(help_text="moment, of the points on lent GPUs (layer 1)."),
                        ),
                    ],
                    options={
                        "db_table": "capacity_bookedpoints",
                        "constraints": [
                            models.UniqueConstraint(
                                fields=("day", "tenant_id", "pool_id", "gpu_model", "hour"),
                                name="bookedpoints_unique",
                                violation_error_message="The tenant already has booked points for this pool, model, day and hour.",
                            )
                        ],
                    },
                ),
                migrations.CreateModel(
                    name="BookedPointsChange",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("tenant_id", models.BigIntegerField()),
                        ("pool_id", models.BigIntegerField()),
                        ("gpu_model", models.CharField(max_length=200)),
                        ("day", models.DateField()),
                        ("hour", models.SmallIntegerField()),
                        ("share", models.BigIntegerField()),
                        ("moment", models.BigIntegerField()),
                        ("lent_share", models.BigIntegerField()),
                        ("lent_moment", models.BigIntegerField()),
                    ],
                    options={
                        "db_table": "capacity_bookedpointschange",
                        "indexes": [models.Index(fields=["day"], name="bookedpointschange_day_idx")],
                    },
                ),
            ],
        ),
        migrations.RunPython(to_usage, to_capacity),
    ]
