"""Each booking keeps what it holds and its GPU's model as they were when it was booked (capacity.gpu_hours).

capacity_devicebooking and its history gain `gpu_sevenths` (sevenths of a GPU: a whole GPU 7, a MIG
slice its compute slices, a slice booked with its parent GPU by the same allocation 0: a whole-node
lease counts each GPU once) and `gpu_model` (productName, else the class). A BEFORE INSERT trigger
fills them for an insert that does not give them; the commits give them. The booked-hours triggers
read them instead of the device, so a node that renames its GPUs no longer moves anyone's past hours
(the device triggers go), and the rollups are counted again from the bookings.
"""

import importlib

from django.db import migrations, models

POINTS = importlib.import_module("capacity.migrations.0038_booked_points")
HOURS = importlib.import_module("capacity.migrations.0035_booked_hours")

# capacity.gpu_hours.held_sevenths in SQL, as of this migration (tests/db/test_gpu_hours.py keeps them agreeing).
SEVENTHS = """(CASE WHEN {parent_booked} THEN 0 WHEN d.device_class LIKE 'mig-%'
                  THEN coalesce(substring(d.device_class FROM 'mig-(?:[0-9]+c[.])?([0-9]+)g')::int, 1)
                  ELSE 7 END)::smallint"""
MODEL = "left(coalesce(nullif(d.attributes->>'productName', ''), d.device_class), 200)"


def pieces(rows: str, sign: int) -> str:
    """Return 0038's pieces of `rows`, keyed and weighted by what each booking kept."""
    return f"""
SELECT r.tenant_id, r.pool_id, b.gpu_model, (k.day AT TIME ZONE 'UTC')::date AS day, b.layer,
       {sign} * b.gpu_sevenths AS share,
       {POINTS.since_midnight("greatest(lower(b.during), k.day)")} AS lo,
       {POINTS.since_midnight("least(upper(b.during), k.day + interval '24 hours')")} AS hi
  FROM {rows} b
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
 WHERE r.tenant_id IS NOT NULL AND NOT isempty(b.during) AND b.gpu_sevenths <> 0"""


RECOUNT = POINTS.appended(
    pieces("capacity_devicebooking_all", 1), hours="capacity_bookedhours", points="capacity_bookedpoints"
)

APPLY = f"""
CREATE OR REPLACE FUNCTION capacity_bookedhours_apply() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    {POINTS.appended(pieces("new_rows", 1))};
  ELSIF TG_OP = 'DELETE' THEN
    {POINTS.appended(pieces("old_rows", -1))};
  ELSIF TG_OP = 'UPDATE' THEN
    {POINTS.appended(pieces("new_rows", 1), pieces("old_rows", -1))};
  ELSE
    DELETE FROM capacity_bookedhourschange;
    DELETE FROM capacity_bookedhours;
    DELETE FROM capacity_bookedpointschange;
    DELETE FROM capacity_bookedpoints;
    {RECOUNT};
  END IF;
  RETURN NULL;
END $$;
"""

# What an insert without them books: the device now, and whether the allocation already books its parent.
FILL = f"""
CREATE FUNCTION capacity_devicebooking_held() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  SELECT coalesce(NEW.gpu_sevenths, {
    SEVENTHS.format(
        parent_booked='''EXISTS (
           SELECT 1 FROM capacity_devicebooking p WHERE p.allocation_id = NEW.allocation_id AND p.device_id = d.parent_id)'''
    )
}),
         CASE WHEN coalesce(NEW.gpu_model, '') = '' THEN {MODEL} ELSE NEW.gpu_model END
    INTO NEW.gpu_sevenths, NEW.gpu_model
    FROM inventory_device d WHERE d.id = NEW.device_id;
  RETURN NEW;
END $$;
CREATE TRIGGER capacity_devicebooking_held BEFORE INSERT ON capacity_devicebooking
  FOR EACH ROW WHEN (NEW.gpu_sevenths IS NULL OR NEW.gpu_model IS NULL OR NEW.gpu_model = '')
  EXECUTE FUNCTION capacity_devicebooking_held();
"""


def filled(table: str) -> str:
    """Return an UPDATE giving `table`'s rows what they hold and their model (their device as it is now)."""
    return f"""
UPDATE {table} b
   SET gpu_model = {MODEL},
       gpu_sevenths = {
        SEVENTHS.format(
            parent_booked='''EXISTS (
         SELECT 1 FROM capacity_devicebooking_all p WHERE p.allocation_id = b.allocation_id AND p.device_id = d.parent_id)'''
        )
    }
  FROM inventory_device d WHERE d.id = b.device_id;
"""


SQL = (
    """
ALTER TABLE capacity_devicebooking ADD COLUMN gpu_model varchar(200), ADD COLUMN gpu_sevenths smallint;
ALTER TABLE capacity_devicebookinghistory ADD COLUMN gpu_model varchar(200), ADD COLUMN gpu_sevenths smallint;
ALTER TABLE capacity_devicebooking DISABLE TRIGGER capacity_bookedhours_update;
ALTER TABLE capacity_devicebookinghistory DISABLE TRIGGER capacity_bookedhours_update;
"""
    + filled("capacity_devicebooking")
    + filled("capacity_devicebookinghistory")
    + """
-- History of a device deleted since: a whole GPU of no known model.
UPDATE capacity_devicebookinghistory SET gpu_model = 'unknown', gpu_sevenths = 7 WHERE gpu_sevenths IS NULL;
ALTER TABLE capacity_devicebooking ENABLE TRIGGER capacity_bookedhours_update;
ALTER TABLE capacity_devicebookinghistory ENABLE TRIGGER capacity_bookedhours_update;
ALTER TABLE capacity_devicebooking ALTER COLUMN gpu_model SET NOT NULL, ALTER COLUMN gpu_sevenths SET NOT NULL;
ALTER TABLE capacity_devicebookinghistory ALTER COLUMN gpu_model SET NOT NULL, ALTER COLUMN gpu_sevenths SET NOT NULL;
CREATE OR REPLACE VIEW capacity_devicebooking_all AS
    SELECT id, device_id, allocation_id, during, layer, gpu_model, gpu_sevenths FROM capacity_devicebooking
    UNION ALL
    SELECT id, device_id, allocation_id, during, layer, gpu_model, gpu_sevenths FROM capacity_devicebookinghistory;
DROP TRIGGER capacity_bookedhours_device_update ON inventory_device;
DROP TRIGGER capacity_bookedhours_device_delete ON inventory_device;
DROP FUNCTION capacity_bookedhours_device();
"""
    + FILL
    + APPLY
    + """
DELETE FROM capacity_bookedhourschange;
DELETE FROM capacity_bookedhours;
DELETE FROM capacity_bookedpointschange;
DELETE FROM capacity_bookedpoints;
"""
    + RECOUNT
    + ";"
)

REVERSE = (
    """
DROP TRIGGER capacity_devicebooking_held ON capacity_devicebooking;
DROP FUNCTION capacity_devicebooking_held();
DROP VIEW capacity_devicebooking_all;
CREATE VIEW capacity_devicebooking_all AS
    SELECT id, device_id, allocation_id, during, layer FROM capacity_devicebooking
    UNION ALL
    SELECT id, device_id, allocation_id, during, layer FROM capacity_devicebookinghistory;
ALTER TABLE capacity_devicebooking DROP COLUMN gpu_model, DROP COLUMN gpu_sevenths;
ALTER TABLE capacity_devicebookinghistory DROP COLUMN gpu_model, DROP COLUMN gpu_sevenths;
"""
    + POINTS.FUNCTION.replace(
        "CREATE OR REPLACE FUNCTION capacity_bookedhours_device",
        "CREATE FUNCTION capacity_bookedhours_device",
    )
    + HOURS.DEVICE_TRIGGERS
)

MODEL_HELP = "The booked GPU's model when booked: its productName, else its class."
SEVENTHS_HELP = "Sevenths of a GPU it holds: 7 whole, a MIG slice its slices, 0 a slice booked with its GPU."


class Migration(migrations.Migration):
    dependencies = [("capacity", "0040_reservation_version_and_window_bumps")]

    operations = [
        migrations.RunSQL(
            SQL,
            REVERSE,
            state_operations=[
                migrations.AddField(
                    model_name="devicebooking",
                    name="gpu_model",
                    field=models.CharField(max_length=200, help_text=MODEL_HELP),
                ),
                migrations.AddField(
                    model_name="devicebooking",
                    name="gpu_sevenths",
                    field=models.SmallIntegerField(help_text=SEVENTHS_HELP),
                ),
                migrations.AddField(
                    model_name="anydevicebooking",
                    name="gpu_model",
                    field=models.CharField(max_length=200),
                ),
                migrations.AddField(
                    model_name="anydevicebooking",
                    name="gpu_sevenths",
                    field=models.SmallIntegerField(),
                ),
            ],
        ),
    ]
