"""Reservation history: reservations long over, with nothing of them live, leave the live table.

Partitioned by the month the reservation's window ended;
capacity/archive.py makes the months. The view `capacity_reservation_all` reads both as one table.
A moved reservation keeps its events where they are: their foreign key constraint goes.
"""

import capacity.models.reservations
import django.db.models.deletion
from django.db import migrations, models


SQL = """
CREATE TABLE capacity_reservationhistory (
    id bigint NOT NULL,
    request jsonb NOT NULL,
    status varchar(10) NOT NULL,
    conditions jsonb NOT NULL,
    idempotency_key varchar(200),
    priority varchar(10) NOT NULL,
    binding varchar(12) NOT NULL,
    starts_at timestamptz NOT NULL,
    ends_at timestamptz NOT NULL,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    released_at timestamptz,
    pool_id bigint NOT NULL,
    tenant_id bigint NOT NULL,
    ended timestamptz NOT NULL,
    -- Only what is over moves: a list filtered on a live status skips history altogether
    -- (constraint exclusion of a UNION ALL branch).
    CONSTRAINT reservationhistory_over CHECK (status IN ('released', 'preempted'))
) PARTITION BY RANGE (ended);
CREATE INDEX reservationhistory_id_idx ON capacity_reservationhistory (id);
-- Joined by id from moved allocations (the usage report): without it, a hash of every moved one.
CREATE INDEX allocationhistory_id_idx ON capacity_allocationhistory (id);
-- The lists, newest first, as the live table's reservation_newest_idx and reservation_tenant_newest_idx.
CREATE INDEX reservationhistory_newest_idx ON capacity_reservationhistory (created_at DESC, id DESC);
CREATE INDEX reservationhistory_tenant_newest_idx
    ON capacity_reservationhistory (tenant_id, created_at DESC, id DESC);

CREATE VIEW capacity_reservation_all AS
    SELECT id, request, status, conditions, idempotency_key, priority, binding, starts_at, ends_at, created_at, updated_at, released_at, pool_id, tenant_id FROM capacity_reservation
    UNION ALL
    SELECT id, request, status, conditions, idempotency_key, priority, binding, starts_at, ends_at, created_at, updated_at, released_at, pool_id, tenant_id FROM capacity_reservationhistory;
"""

REVERSE = """
DROP VIEW capacity_reservation_all;
DROP TABLE capacity_reservationhistory;
"""


class Migration(migrations.Migration):

    dependencies = [
        ('capacity', '0018_allocation_history'),
    ]

    operations = [
        migrations.RunSQL(SQL, REVERSE),
        migrations.CreateModel(
            name='AnyReservation',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('request', models.JSONField()),
                ('status', models.CharField(choices=[('pending', 'Pending'), ('queued', 'Queued'), ('placed', 'Placed'), ('released', 'Released'), ('preempted', 'Preempted')], max_length=10)),
                ('conditions', models.JSONField(default=list)),
                ('idempotency_key', models.CharField(max_length=200, null=True)),
                ('priority', models.CharField(choices=[('regular', 'Regular'), ('spot', 'Spot')], max_length=10)),
                ('binding', models.CharField(choices=[('none', 'None'), ('node', 'Node'), ('kubernetes', 'Kubernetes')], max_length=12)),
                ('starts_at', models.DateTimeField()),
                ('ends_at', models.DateTimeField()),
                ('created_at', models.DateTimeField()),
                ('updated_at', models.DateTimeField()),
                ('released_at', models.DateTimeField(null=True)),
            ],
            options={
                'db_table': 'capacity_reservation_all',
                'ordering': ['-created_at', '-id'],
                'managed': False,
            },
            bases=(capacity.models.reservations.Conditions, models.Model),
        ),
        migrations.AlterField(
            model_name='reservationevent',
            name='reservation',
            field=models.ForeignKey(db_constraint=False, db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='events', to='capacity.reservation'),
        ),
    ]
