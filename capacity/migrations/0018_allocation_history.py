"""Allocation history: allocations long over, whose bookings and claims already left, leave too.

Partitioned by the month the allocation ended (its release, or its window's end if sooner);
capacity/archive.py makes the months. The view `capacity_allocation_all` reads both as one table.
"""

from django.db import migrations, models


SQL = """
CREATE TABLE capacity_allocationhistory (
    id bigint NOT NULL,
    reservation_id bigint,
    instance_id varchar(200),
    node_id bigint NOT NULL,
    starts_at timestamptz NOT NULL,
    ends_at timestamptz NOT NULL,
    resources jsonb NOT NULL,
    released_at timestamptz,
    created_at timestamptz NOT NULL,
    ended timestamptz NOT NULL
) PARTITION BY RANGE (ended);
CREATE INDEX allocationhistory_reservation_idx ON capacity_allocationhistory (reservation_id);
CREATE INDEX allocationhistory_node_idx ON capacity_allocationhistory (node_id);

CREATE VIEW capacity_allocation_all AS
    SELECT id, reservation_id, instance_id, node_id, starts_at, ends_at, resources, released_at, created_at
      FROM capacity_allocation
    UNION ALL
    SELECT id, reservation_id, instance_id, node_id, starts_at, ends_at, resources, released_at, created_at
      FROM capacity_allocationhistory;
"""

REVERSE = """
DROP VIEW capacity_allocation_all;
DROP TABLE capacity_allocationhistory;
"""


class Migration(migrations.Migration):

    dependencies = [
        ('capacity', '0017_booking_history'),
    ]

    operations = [
        migrations.RunSQL(SQL, REVERSE),
        migrations.CreateModel(
            name='AnyAllocation',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('instance_id', models.CharField(max_length=200, null=True)),
                ('starts_at', models.DateTimeField()),
                ('ends_at', models.DateTimeField()),
                ('resources', models.JSONField(default=dict)),
                ('released_at', models.DateTimeField(null=True)),
                ('created_at', models.DateTimeField()),
            ],
            options={
                'db_table': 'capacity_allocation_all',
                'managed': False,
            },
        ),
    ]
