"""Booked hours per tenant, pool, GPU model and UTC day, kept by triggers on the bookings (usage report)."""

from django.db import migrations, models


# A booking's GPU-hours per UTC day, in BookedHours' unit (a GPU-hour is 7 × 3,600,000,000: a whole
# GPU counts 7 a microsecond, a MIG slice its compute slices, inventory.gpu_share), keyed as the
# usage report groups them: its reservation's tenant and pool (live or moved to history), and its
# device's model (productName, else the class). A booking of no reservation (an instance placed
# through the port) counts nowhere, as in the report. Days are cut at midnight UTC whatever the
# session's TimeZone ('24 hours', never '1 day').
SEVENTHS = (
    "CASE WHEN d.device_class LIKE 'mig-%' THEN coalesce(substring(d.device_class FROM"
    " 'mig-(?:[0-9]+c[.])?([0-9]+)g')::bigint, 1) ELSE 7 END"
)
MICROS = (
    "((extract(epoch FROM least(upper(b.during), k.day + interval '24 hours'))"
    " - extract(epoch FROM greatest(lower(b.during), k.day))) * 1000000)::bigint"
)
LIVE_DEVICE = "JOIN inventory_device d ON d.id = b.device_id"


def contributions(rows: str, sign: int, device: str = LIVE_DEVICE) -> str:
    """Return SELECT tenant_id, pool_id, gpu_model, day, booked, lent: each of `rows`' days, times `sign`."""
    return f"""
SELECT r.tenant_id, r.pool_id, left(coalesce(d.attributes->>'productName', d.device_class), 200) AS gpu_model,
       (k.day AT TIME ZONE 'UTC')::date AS day,
       {sign} * ({SEVENTHS}) * {MICROS} AS booked,
       CASE WHEN b.layer = 1 THEN {sign} * ({SEVENTHS}) * {MICROS} ELSE 0 END AS lent
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


def appended(*parts: str) -> str:
    """Return the INSERT that appends the parts' sum per key to the changes (nothing that sums to zero)."""
    union = "\n  UNION ALL".join(parts)
    return f"""
INSERT INTO capacity_bookedhourschange (tenant_id, pool_id, gpu_model, day, booked, lent)
SELECT tenant_id, pool_id, gpu_model, day, sum(booked), sum(lent) FROM ({union}) c
 GROUP BY 1, 2, 3, 4 HAVING sum(booked) <> 0 OR sum(lent) <> 0"""


RECOUNT = f"""
INSERT INTO capacity_bookedhours (tenant_id, pool_id, gpu_model, day, booked, lent)
SELECT tenant_id, pool_id, gpu_model, day, sum(booked), sum(lent)
  FROM ({contributions("capacity_devicebooking_all", 1)}) c
 GROUP BY 1, 2, 3, 4 HAVING sum(booked) <> 0 OR sum(lent) <> 0"""

# One function for the statement triggers of the live and the history bookings: rows a statement
# inserted add, rows it deleted subtract, an update does both (a release's cut subtracts the hours
# after it), a truncate counts everything again. So a history move (delete live, insert history in
# one statement) nets to nothing. Appending takes no lock on any row, so two bookings racing for
# one tenant, pool, model and day never wait for each other here, nor deadlock.
FUNCTION = f"""
CREATE FUNCTION capacity_bookedhours_apply() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    {appended(contributions("new_rows", 1))};
  ELSIF TG_OP = 'DELETE' THEN
    {appended(contributions("old_rows", -1))};
  ELSIF TG_OP = 'UPDATE' THEN
    {appended(contributions("new_rows", 1), contributions("old_rows", -1))};
  ELSE
    DELETE FROM capacity_bookedhourschange;
    DELETE FROM capacity_bookedhours;
    {RECOUNT};
  END IF;
  RETURN NULL;
END $$;

-- A device whose model or class changes moves its bookings' hours to the new model and share; one
-- deleted (history only: live bookings protect it) takes them out, as the report no longer finds them.
CREATE FUNCTION capacity_bookedhours_device() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    {appended(contributions(
        "(SELECT * FROM capacity_devicebooking_all WHERE int8range(device_id, device_id, '[]') && int8range(OLD.id, OLD.id, '[]'))",
        -1, "CROSS JOIN (SELECT OLD.device_class AS device_class, OLD.attributes AS attributes) d"))};
  ELSE
    {appended(
        contributions(
            "(SELECT * FROM capacity_devicebooking_all WHERE int8range(device_id, device_id, '[]') && int8range(OLD.id, OLD.id, '[]'))",
            -1, "CROSS JOIN (SELECT OLD.device_class AS device_class, OLD.attributes AS attributes) d"),
        contributions(
            "(SELECT * FROM capacity_devicebooking_all WHERE int8range(device_id, device_id, '[]') && int8range(NEW.id, NEW.id, '[]'))",
            1, "CROSS JOIN (SELECT NEW.device_class AS device_class, NEW.attributes AS attributes) d"))};
  END IF;
  RETURN NULL;
END $$;
"""

TRIGGERS = """
CREATE TRIGGER capacity_bookedhours_insert AFTER INSERT ON {table}
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION capacity_bookedhours_apply();
CREATE TRIGGER capacity_bookedhours_update AFTER UPDATE ON {table}
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION capacity_bookedhours_apply();
CREATE TRIGGER capacity_bookedhours_delete AFTER DELETE ON {table}
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION capacity_bookedhours_apply();
CREATE TRIGGER capacity_bookedhours_truncate AFTER TRUNCATE ON {table}
  FOR EACH STATEMENT EXECUTE FUNCTION capacity_bookedhours_apply();
"""

DEVICE_TRIGGERS = """
CREATE TRIGGER capacity_bookedhours_device_update AFTER UPDATE OF device_class, attributes ON inventory_device
  FOR EACH ROW WHEN (OLD.device_class IS DISTINCT FROM NEW.device_class
                     OR OLD.attributes->>'productName' IS DISTINCT FROM NEW.attributes->>'productName')
  EXECUTE FUNCTION capacity_bookedhours_device();
CREATE TRIGGER capacity_bookedhours_device_delete AFTER DELETE ON inventory_device
  FOR EACH ROW EXECUTE FUNCTION capacity_bookedhours_device();
"""

SQL = (
    FUNCTION
    + TRIGGERS.format(table="capacity_devicebooking")
    + TRIGGERS.format(table="capacity_devicebookinghistory")
    + DEVICE_TRIGGERS
    + RECOUNT
    + ";"
)

REVERSE = """
DROP TRIGGER IF EXISTS capacity_bookedhours_device_update ON inventory_device;
DROP TRIGGER IF EXISTS capacity_bookedhours_device_delete ON inventory_device;
""" + "".join(
    f"DROP TRIGGER IF EXISTS capacity_bookedhours_{op} ON {table};\n"
    for table in ("capacity_devicebooking", "capacity_devicebookinghistory")
    for op in ("insert", "update", "delete", "truncate")
) + """
DROP FUNCTION IF EXISTS capacity_bookedhours_device();
DROP FUNCTION IF EXISTS capacity_bookedhours_apply();
"""


class Migration(migrations.Migration):

    dependencies = [
        ('capacity', '0034_reservation_awaiting_approval_index'),
    ]

    operations = [
        migrations.CreateModel(
            name='BookedHours',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('tenant_id', models.BigIntegerField()),
                ('pool_id', models.BigIntegerField()),
                ('gpu_model', models.CharField(help_text="The device's productName, else its class.", max_length=200)),
                ('day', models.DateField(help_text='The UTC day.')),
                ('booked', models.BigIntegerField(help_text='GPU-hours booked × GPU_HOUR (every layer).')),
                ('lent', models.BigIntegerField(help_text='Of booked, the hours on lent GPUs (layer 1) × GPU_HOUR.')),
            ],
            options={
                'constraints': [models.UniqueConstraint(fields=('day', 'tenant_id', 'pool_id', 'gpu_model'), name='bookedhours_unique', violation_error_message='The tenant already has booked hours for this pool, model and day.')],
            },
        ),
        migrations.CreateModel(
            name='BookedHoursChange',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('tenant_id', models.BigIntegerField()),
                ('pool_id', models.BigIntegerField()),
                ('gpu_model', models.CharField(max_length=200)),
                ('day', models.DateField()),
                ('booked', models.BigIntegerField()),
                ('lent', models.BigIntegerField()),
            ],
            options={
                'indexes': [models.Index(fields=['day'], name='bookedhourschange_day_idx')],
            },
        ),
        migrations.RunSQL(SQL, REVERSE),
    ]
