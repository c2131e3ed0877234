"""The usage app takes over three models with their tables and rows: state only, no table moves.

inventory's DeviceSampleHour and SampleFold (inventory 0015) and capacity's UnbookedUse (capacity
0022) leave those apps' state first; here they enter usage's, on the tables they always had.
Reversing it (and those two) changes no table either.
"""

import django.contrib.postgres.indexes
import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('inventory', '0015_sample_folds_to_usage'),
        ('capacity', '0023_unbooked_use_to_usage'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.CreateModel(
                    name='SampleFold',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('folded_until', models.DateTimeField(help_text='Every hour before this one is folded.')),
                    ],
                    options={
                        'db_table': 'inventory_samplefold',
                    },
                ),
                migrations.CreateModel(
                    name='UnbookedUse',
                    fields=[
                        ('device', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, primary_key=True, related_name='+', serialize=False, to='inventory.device')),
                        ('since', models.DateTimeField(help_text='The first minute of this spell of use without a booking.')),
                        ('seen_at', models.DateTimeField(help_text='The latest sample that showed it.')),
                        ('processes', models.SmallIntegerField(default=0)),
                        ('process_mib', models.IntegerField(default=0)),
                        ('message', models.CharField(max_length=300)),
                        ('node', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='unbooked_use', to='inventory.node')),
                    ],
                    options={
                        'db_table': 'capacity_unbookeduse',
                        'ordering': ['node', 'device'],
                    },
                ),
                migrations.CreateModel(
                    name='DeviceSampleHour',
                    fields=[
                        ('pk', models.CompositePrimaryKey('device', 'hour', blank=True, editable=False, primary_key=True, serialize=False)),
                        ('hour', models.DateTimeField()),
                        ('gpu_percent_sum', models.IntegerField(default=0, help_text="The sum of the minutes' GPU %.")),
                        ('samples', models.SmallIntegerField(default=0, help_text='Minutes with a GPU %.')),
                        ('minutes_without_process', models.SmallIntegerField(default=0)),
                        ('memory_used_mib_max', models.IntegerField(blank=True, null=True)),
                        ('process_mib_max', models.IntegerField(default=0)),
                        ('device', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='sample_hours', to='inventory.device')),
                    ],
                    options={
                        'db_table': 'inventory_devicesamplehour',
                        'indexes': [django.contrib.postgres.indexes.BrinIndex(fields=['hour'], name='devicesamplehour_hour_brin')],
                        'constraints': [models.CheckConstraint(condition=models.Q(('minutes_without_process__lte', 60), ('samples__gte', 0), ('samples__lte', 60)), name='devicesamplehour_minutes_0_60', violation_error_message='An hour holds at most 60 minutes.')],
                    },
                ),
            ],
        ),
    ]
