"""PoolPolicy and PoolShare, moved from capacity (capacity/migrations/0045_move_policy_models): state only.

The tables, their rows, constraints (names and messages as capacity made them) and capacity's
booking-version triggers stay as they were; the models keep the table names (db_table). The
models' content types follow them (app_label capacity -> policy), so their permissions, the
groups holding them and the admin's history of their rows carry over.
"""

import datetime

import django.db.models.deletion
from django.db import migrations, models

MODELS = ("poolpolicy", "poolshare")


def _relabel(apps, old: str, new: str) -> None:
    """Move the models' content types from one app to the other, unless the other has them already."""
    ContentType = apps.get_model("contenttypes", "ContentType")
    for model in MODELS:
        if not ContentType.objects.filter(app_label=new, model=model).exists():
            ContentType.objects.filter(app_label=old, model=model).update(app_label=new)


def to_policy(apps, schema_editor) -> None:
    _relabel(apps, "capacity", "policy")


def to_capacity(apps, schema_editor) -> None:
    _relabel(apps, "policy", "capacity")


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("capacity", "0045_move_policy_models"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("inventory", "0017_history_request_id"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="PoolPolicy",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        (
                            "pool",
                            models.OneToOneField(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="policy",
                                to="inventory.pool",
                            ),
                        ),
                        ("idle_warn_after", models.DurationField(blank=True, null=True)),
                        ("idle_release_after", models.DurationField(blank=True, null=True)),
                        ("allow_keep_when_idle", models.BooleanField(default=True)),
                        ("lend_idle", models.BooleanField(default=False)),
                        ("spot_notice", models.DurationField(blank=True, null=True)),
                        ("spot_min_runtime", models.DurationField(blank=True, null=True)),
                        ("max_duration", models.DurationField(blank=True, null=True)),
                        ("max_lead_time", models.DurationField(blank=True, null=True)),
                        ("max_future_gpu_hours", models.PositiveIntegerField(blank=True, null=True)),
                        ("approval_above_gpu_hours", models.PositiveIntegerField(blank=True, null=True)),
                        ("approval_hold", models.DurationField(default=datetime.timedelta(days=1))),
                        ("policy_webhook", models.URLField(blank=True, max_length=2000, null=True)),
                        ("policy_webhook_secret", models.CharField(blank=True, default="", max_length=100)),
                        (
                            "policy_webhook_on_error",
                            models.CharField(
                                choices=[("allow", "Allow"), ("deny", "Deny")], default="deny", max_length=5
                            ),
                        ),
                        ("policy_webhook_concurrency", models.PositiveIntegerField(blank=True, null=True)),
                        ("updated_at", models.DateTimeField(auto_now=True)),
                    ],
                    options={
                        "verbose_name_plural": "pool policies",
                        "db_table": "capacity_poolpolicy",
                        "ordering": ["pool"],
                        "constraints": [
                            models.CheckConstraint(
                                condition=models.Q(
                                    ("idle_warn_after__isnull", True),
                                    ("idle_warn_after__gt", datetime.timedelta(0)),
                                    _connector="OR",
                                ),
                                name="poolpolicy_idle_warn_positive",
                                violation_error_message="idleWarnAfter must be more than 0.",
                            ),
                            models.CheckConstraint(
                                condition=models.Q(
                                    ("idle_release_after__isnull", True),
                                    ("idle_release_after__gt", datetime.timedelta(0)),
                                    _connector="OR",
                                ),
                                name="poolpolicy_idle_release_positive",
                                violation_error_message="idleReleaseAfter must be more than 0.",
                            ),
                            models.CheckConstraint(
                                condition=models.Q(
                                    ("spot_notice__isnull", True),
                                    ("spot_notice__gt", datetime.timedelta(0)),
                                    _connector="OR",
                                ),
                                name="poolpolicy_spot_notice_positive",
                                violation_error_message="spotNotice must be more than 0.",
                            ),
                            models.CheckConstraint(
                                condition=models.Q(
                                    ("spot_min_runtime__isnull", True),
                                    ("spot_min_runtime__gt", datetime.timedelta(0)),
                                    _connector="OR",
                                ),
                                name="poolpolicy_spot_min_runtime_positive",
                                violation_error_message="spotMinRuntime must be more than 0.",
                            ),
                            models.CheckConstraint(
                                condition=models.Q(
                                    ("max_duration__isnull", True),
                                    ("max_duration__gt", datetime.timedelta(0)),
                                    _connector="OR",
                                ),
                                name="poolpolicy_max_duration_positive",
                                violation_error_message="maxDuration must be more than 0.",
                            ),
                            models.CheckConstraint(
                                condition=models.Q(
                                    ("max_lead_time__isnull", True),
                                    ("max_lead_time__gt", datetime.timedelta(0)),
                                    _connector="OR",
                                ),
                                name="poolpolicy_max_lead_time_positive",
                                violation_error_message="maxLeadTime must be more than 0.",
                            ),
                            models.CheckConstraint(
                                condition=models.Q(
                                    ("max_future_gpu_hours__isnull", True),
                                    ("max_future_gpu_hours__gt", 0),
                                    _connector="OR",
                                ),
                                name="poolpolicy_max_future_gpu_hours_positive",
                                violation_error_message="maxFutureGpuHours must be more than 0.",
                            ),
                            models.CheckConstraint(
                                condition=models.Q(
                                    ("approval_above_gpu_hours__isnull", True),
                                    ("approval_above_gpu_hours__gt", 0),
                                    _connector="OR",
                                ),
                                name="poolpolicy_approval_above_gpu_hours_positive",
                                violation_error_message="approvalAboveGpuHours must be more than 0.",
                            ),
                            models.CheckConstraint(
                                condition=models.Q(
                                    ("approval_hold__isnull", True),
                                    ("approval_hold__gt", datetime.timedelta(0)),
                                    _connector="OR",
                                ),
                                name="poolpolicy_approval_hold_positive",
                                violation_error_message="approvalHold must be more than 0.",
                            ),
                            models.CheckConstraint(
                                condition=models.Q(
                                    ("policy_webhook_concurrency__isnull", True),
                                    ("policy_webhook_concurrency__gt", 0),
                                    _connector="OR",
                                ),
                                name="poolpolicy_policy_webhook_concurrency_positive",
                                violation_error_message="policyWebhookConcurrency must be more than 0.",
                            ),
                            models.CheckConstraint(
                                condition=models.Q(("policy_webhook_on_error__in", ["allow", "deny"])),
                                name="poolpolicy_on_error_known",
                                violation_error_message="policyWebhookOnError must be allow or deny.",
                            ),
                        ],
                    },
                ),
                migrations.CreateModel(
                    name="PoolShare",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        (
                            "pool",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="shares",
                                to="inventory.pool",
                            ),
                        ),
                        (
                            "tenant",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="pool_shares",
                                to="inventory.tenant",
                            ),
                        ),
                        ("guaranteed_gpus", models.IntegerField()),
                        ("borrowing_limit_gpus", models.IntegerField(blank=True, null=True)),
                        ("lending_limit_gpus", models.IntegerField(blank=True, null=True)),
                    ],
                    options={
                        "db_table": "capacity_poolshare",
                        "ordering": ["pool", "tenant"],
                        "constraints": [
                            models.UniqueConstraint(
                                fields=("pool", "tenant"),
                                name="poolshare_unique",
                                violation_error_message="The tenant already has a share of this pool.",
                            ),
                            models.CheckConstraint(
                                condition=models.Q(("guaranteed_gpus__gte", 0)),
                                name="poolshare_guaranteed_nonnegative",
                                violation_error_message="A guarantee cannot be negative.",
                            ),
                            models.CheckConstraint(
                                condition=models.Q(
                                    ("borrowing_limit_gpus__isnull", True),
                                    ("borrowing_limit_gpus__gte", 0),
                                    _connector="OR",
                                ),
                                name="poolshare_borrowing_nonnegative",
                                violation_error_message="A borrowing limit cannot be negative.",
                            ),
                            models.CheckConstraint(
                                condition=models.Q(
                                    ("lending_limit_gpus__isnull", True),
                                    ("lending_limit_gpus__gte", 0),
                                    _connector="OR",
                                ),
                                name="poolshare_lending_nonnegative",
                                violation_error_message="A lending limit cannot be negative.",
                            ),
                        ],
                    },
                ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(to_policy, to_capacity),
    ]
