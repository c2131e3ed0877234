"""History tables: device bookings and scalar claims long over leave the live (EXCLUDE) tables.

Each is partitioned by the month of its end (`ended`); capacity/archive.py makes the months it
moves rows into. The view `capacity_devicebooking_all` reads live and moved bookings as one table.
"""

import django.contrib.postgres.fields.ranges
from django.db import migrations, models


SQL = """
CREATE TABLE capacity_devicebookinghistory (
    id bigint NOT NULL,
    device_id bigint NOT NULL,
    allocation_id bigint NOT NULL,
    during tstzrange NOT NULL,
    ended timestamptz NOT NULL
) PARTITION BY RANGE (ended);
CREATE INDEX devicebookinghistory_allocation_idx ON capacity_devicebookinghistory (allocation_id);
-- As the live table's EXCLUDE index: a device range and a window (the node timeline) in one probe.
CREATE INDEX devicebookinghistory_device_during_idx ON capacity_devicebookinghistory
    USING gist (int8range(device_id, device_id, '[]'), during);

CREATE TABLE capacity_scalarclaimhistory (
    id bigint NOT NULL,
    allocation_id bigint NOT NULL,
    node_id bigint NOT NULL,
    resource varchar(100) NOT NULL,
    amount bigint NOT NULL,
    during tstzrange NOT NULL,
    ended timestamptz NOT NULL
) PARTITION BY RANGE (ended);
CREATE INDEX scalarclaimhistory_allocation_idx ON capacity_scalarclaimhistory (allocation_id);

CREATE VIEW capacity_devicebooking_all AS
    SELECT id, device_id, allocation_id, during FROM capacity_devicebooking
    UNION ALL
    SELECT id, device_id, allocation_id, during FROM capacity_devicebookinghistory;
"""

REVERSE = """
DROP VIEW capacity_devicebooking_all;
DROP TABLE capacity_scalarclaimhistory;
DROP TABLE capacity_devicebookinghistory;
"""


class Migration(migrations.Migration):

    dependencies = [
        ('capacity', '0016_reservation_newest_indexes'),
        ('inventory', '0013_sample_hours'),
    ]

    operations = [
        migrations.RunSQL(SQL, REVERSE),
        migrations.CreateModel(
            name='AnyDeviceBooking',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('during', django.contrib.postgres.fields.ranges.DateTimeRangeField()),
            ],
            options={
                'db_table': 'capacity_devicebooking_all',
                'managed': False,
            },
        ),
        migrations.AddIndex(
            model_name='scalarclaim',
            index=models.Index(models.Func(models.F('during'), function='upper'), name='scalarclaim_ends_idx'),
        ),
    ]
