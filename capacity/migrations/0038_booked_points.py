"""Booked points: where bookings start and end within each UTC day, per hour, so the usage report splits today at now from rows.

The booked-hours triggers (0035) now cut each booking into its days once and append both the day's
hours and the day's points (capacity.models.rollups.BookedPoints) in one statement.
"""

import importlib

from django.db import migrations, models

# A GPU's share in sevenths (inventory.gpu_share), and an instant as µs since its UTC day's midnight
# (numeric epochs: exact). As 0035 keys them: the reservation (live or in history) and the device.
SEVENTHS = (
    "CASE WHEN d.device_class LIKE 'mig-%' THEN coalesce(substring(d.device_class FROM"
    " 'mig-(?:[0-9]+c[.])?([0-9]+)g')::bigint, 1) ELSE 7 END"
)
LIVE_DEVICE = "JOIN inventory_device d ON d.id = b.device_id"
HOUR_US = 3_600_000_000


def since_midnight(instant: str) -> str:
    return f"((extract(epoch FROM {instant}) - extract(epoch FROM k.day)) * 1000000)::bigint"


def pieces(rows: str, sign: int, device: str = LIVE_DEVICE) -> str:
    """Return SELECT keys, day, layer, share (sevenths × sign), lo, hi (µs since midnight): each of `rows`' days."""
    return f"""
SELECT r.tenant_id, r.pool_id, left(coalesce(d.attributes->>'productName', d.device_class), 200) AS gpu_model,
       (k.day AT TIME ZONE 'UTC')::date AS day, b.layer, {sign} * ({SEVENTHS}) AS share,
       {since_midnight("greatest(lower(b.during), k.day)")} AS lo,
       {since_midnight("least(upper(b.during), k.day + interval '24 hours')")} AS hi
  FROM {rows} b
  {device}
  LEFT JOIN capacity_allocation la ON la.id = b.allocation_id
  CROSS JOIN LATERAL (
    SELECT coalesce(la.reservation_id, (SELECT x.reservation_id FROM capacity_allocationhistory x
                                         WHERE x.id = b.allocation_id)) AS id) a
  LEFT JOIN capacity_reservation lr ON lr.id = a.id
  CROSS JOIN LATERAL (
    SELECT coalesce(lr.tenant_id, (SELECT y.tenant_id FROM capacity_reservationhistory y WHERE y.id = a.id)) AS tenant_id,
           coalesce(lr.pool_id, (SELECT y.pool_id FROM capacity_reservationhistory y WHERE y.id = a.id)) AS pool_id) r
  CROSS JOIN LATERAL generate_series(date_trunc('day', lower(b.during), 'UTC'),
                                     upper(b.during) - interval '1 microsecond', interval '24 hours') AS k(day)
 WHERE r.tenant_id IS NOT NULL AND NOT isempty(b.during)"""


def hours_insert(table: str) -> str:
    """Return an INSERT of the pieces' hours per key and day into `table` (nothing that sums to zero)."""
    return f"""
INSERT INTO {table} (tenant_id, pool_id, gpu_model, day, booked, lent)
SELECT tenant_id, pool_id, gpu_model, day, sum(share * (hi - lo)), coalesce(sum(share * (hi - lo)) FILTER (WHERE layer = 1), 0)
  FROM pieces GROUP BY 1, 2, 3, 4
HAVING sum(share * (hi - lo)) <> 0 OR coalesce(sum(share * (hi - lo)) FILTER (WHERE layer = 1), 0) <> 0"""


# A piece's start counts − and its end +, at its instant; one at midnight counts nothing at any now.
POINTS = "pieces CROSS JOIN LATERAL (VALUES (-1, lo), (1, hi)) AS e(side, x) WHERE e.x > 0"


def points_insert(table: str) -> str:
    """Return an INSERT of the pieces' points per key, day and hour into `table` (nothing that sums to zero)."""
    return f"""
INSERT INTO {table} (tenant_id, pool_id, gpu_model, day, hour, share, moment, lent_share, lent_moment)
SELECT tenant_id, pool_id, gpu_model, day, (x / {HOUR_US})::smallint,
       sum(side * share), sum(side * share * x),
       coalesce(sum(side * share) FILTER (WHERE layer = 1), 0), coalesce(sum(side * share * x) FILTER (WHERE layer = 1), 0)
  FROM {POINTS} GROUP BY 1, 2, 3, 4, 5
HAVING sum(side * share) <> 0 OR sum(side * share * x) <> 0
    OR coalesce(sum(side * share) FILTER (WHERE layer = 1), 0) <> 0
    OR coalesce(sum(side * share * x) FILTER (WHERE layer = 1), 0) <> 0"""


def appended(*parts: str, hours: str = "capacity_bookedhourschange", points: str = "capacity_bookedpointschange") -> str:
    """Return one statement: the parts cut into days once, their hours and their points appended."""
    union = "\n  UNION ALL".join(parts)
    return f"""
WITH pieces AS MATERIALIZED ({union}
), hours AS ({hours_insert(hours)})
{points_insert(points)}"""


RECOUNT = appended(
    pieces("capacity_devicebooking_all", 1), hours="capacity_bookedhours", points="capacity_bookedpoints"
)
FIRST_POINTS = f"WITH pieces AS MATERIALIZED ({pieces('capacity_devicebooking_all', 1)}){points_insert('capacity_bookedpoints')}"

DEVICE_ROWS = (
    "(SELECT * FROM capacity_devicebooking_all WHERE int8range(device_id, device_id, '[]') && int8range({r}.id, {r}.id, '[]'))"
)
AS_DEVICE = "CROSS JOIN (SELECT {r}.device_class AS device_class, {r}.attributes AS attributes) d"

# 0035's functions, each statement now appending the points too (CREATE OR REPLACE keeps the triggers).
FUNCTION = f"""
CREATE OR REPLACE FUNCTION capacity_bookedhours_apply() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    {appended(pieces("new_rows", 1))};
  ELSIF TG_OP = 'DELETE' THEN
    {appended(pieces("old_rows", -1))};
  ELSIF TG_OP = 'UPDATE' THEN
    {appended(pieces("new_rows", 1), pieces("old_rows", -1))};
  ELSE
    DELETE FROM capacity_bookedhourschange;
    DELETE FROM capacity_bookedhours;
    DELETE FROM capacity_bookedpointschange;
    DELETE FROM capacity_bookedpoints;
    {RECOUNT};
  END IF;
  RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION capacity_bookedhours_device() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    {appended(pieces(DEVICE_ROWS.format(r="OLD"), -1, AS_DEVICE.format(r="OLD")))};
  ELSE
    {appended(
        pieces(DEVICE_ROWS.format(r="OLD"), -1, AS_DEVICE.format(r="OLD")),
        pieces(DEVICE_ROWS.format(r="NEW"), 1, AS_DEVICE.format(r="NEW")))};
  END IF;
  RETURN NULL;
END $$;
"""

SQL = FUNCTION + FIRST_POINTS + ";"


def reverse_sql() -> str:
    before = importlib.import_module("capacity.migrations.0035_booked_hours")
    return before.FUNCTION.replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION")


class Migration(migrations.Migration):

    dependencies = [
        ('capacity', '0037_pool_settings_bump_version'),
        ('inventory', '0017_history_request_id'),
    ]

    operations = [
        migrations.CreateModel(
            name='BookedPoints',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('tenant_id', models.BigIntegerField()),
                ('pool_id', models.BigIntegerField()),
                ('gpu_model', models.CharField(max_length=200)),
                ('day', models.DateField(help_text='The UTC day.')),
                ('hour', models.SmallIntegerField(help_text="The points' hour since the day's midnight (UTC), 0 to 24.")),
                ('share', models.BigIntegerField(help_text='Σ sign × sevenths of a GPU: ends +, starts −.')),
                ('moment', models.BigIntegerField(help_text='Σ sign × sevenths × µs since midnight (GPU_HOUR units).')),
                ('lent_share', models.BigIntegerField(help_text='share, of the points on lent GPUs (layer 1).')),
                ('lent_moment', models.BigIntegerField(help_text='moment, of the points on lent GPUs (layer 1).')),
            ],
        ),
        migrations.CreateModel(
            name='BookedPointsChange',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('tenant_id', models.BigIntegerField()),
                ('pool_id', models.BigIntegerField()),
                ('gpu_model', models.CharField(max_length=200)),
                ('day', models.DateField()),
                ('hour', models.SmallIntegerField()),
                ('share', models.BigIntegerField()),
                ('moment', models.BigIntegerField()),
                ('lent_share', models.BigIntegerField()),
                ('lent_moment', models.BigIntegerField()),
            ],
        ),
        migrations.AddIndex(
            model_name='devicebooking',
            index=models.Index(models.Func(models.F('during'), function='lower'), name='devicebooking_starts_idx'),
        ),
        migrations.AddConstraint(
            model_name='bookedpoints',
            constraint=models.UniqueConstraint(fields=('day', 'tenant_id', 'pool_id', 'gpu_model', 'hour'), name='bookedpoints_unique', violation_error_message='The tenant already has booked points for this pool, model, day and hour.'),
        ),
        migrations.AddIndex(
            model_name='bookedpointschange',
            index=models.Index(fields=['day'], name='bookedpointschange_day_idx'),
        ),
        migrations.RunSQL(SQL, reverse_sql()),
    ]
