"""What-if runs, taken over from capacity on the table they already have (`capacity_whatifrun`).

State only (no SQL): capacity created the table in 0020_whatif_run and forgets the model in
0022_whatifrun_moves_to_whatif; here whatif knows it, with db_table naming that table, so the
rows stay where they are. Reversed, whatif forgets it again and the table is untouched.
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('capacity', '0022_whatifrun_moves_to_whatif'),
        ('inventory', '0013_sample_hours'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='WhatIfRun',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('inputs', models.JSONField()),
                        ('status', models.CharField(choices=[('queued', 'Queued'), ('running', 'Running'), ('done', 'Done'), ('failed', 'Failed')], default='queued', max_length=8)),
                        ('progress', models.PositiveSmallIntegerField(default=0)),
                        ('started_at', models.DateTimeField(blank=True, null=True)),
                        ('finished_at', models.DateTimeField(blank=True, null=True)),
                        ('result', models.JSONField(blank=True, null=True)),
                        ('error', models.CharField(blank=True, default='', max_length=500)),
                        ('created_by', models.ForeignKey(null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                        ('pool', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='whatif_runs', to='inventory.pool')),
                    ],
                    options={
                        'db_table': 'capacity_whatifrun',
                        'indexes': [models.Index(fields=['pool', '-created_at'], name='whatif_pool_newest_idx'), models.Index(fields=['status', 'created_at'], name='whatif_queue_idx')],
                        'constraints': [models.CheckConstraint(condition=models.Q(('progress__lte', 100)), name='whatif_progress_at_most_100', violation_error_message="A run's progress is a per cent: at most 100."), models.CheckConstraint(condition=models.Q(('status__in', ['queued', 'running', 'done', 'failed'])), name='whatif_status_known', violation_error_message='A run is queued, running, done or failed.'), models.CheckConstraint(condition=models.Q(models.Q(('status', 'done'), _negated=True), ('result__isnull', False), _connector='OR'), name='whatif_done_has_result', violation_error_message='A finished run keeps its result.')],
                    },
                ),
            ],
            database_operations=[],
        ),
    ]
