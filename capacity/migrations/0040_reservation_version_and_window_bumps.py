"""A per-pool reservation version bumped at commit; maintenance windows bump the booking version.

The reservation lists draw reservations (status, conditions, approvals, releases) that change
without any booking: a deferred row trigger on capacity_reservation sets the pool's reservation
version once per transaction, at commit, as 0036 does for bookings (the same sequence, its own
transaction-local set of pools bumped). It is a column of the booking version's row: a booking
bumps both, and two rows locked at commit in the order their events were queued (the reservation
first when booking, the bookings first when releasing) deadlocked concurrent bookings of a pool. A maintenance window's nodes are drawn
on the node page's timeline and the pool's chart: adding or removing one bumps the booking version
of the node's pool (a window's span and reason never change after it is scheduled; its `switched`
flag is drawn nowhere).
"""

from django.db import migrations, models

FORWARD = """
CREATE FUNCTION capacity_bump_reservation_version(p_pool bigint) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  seen text := coalesce(current_setting('berth.reservation_version_bumped', true), '');
BEGIN
  IF p_pool IS NULL THEN
    RETURN;
  END IF;
  -- Tests that never commit run these triggers at each statement and bump at every row.
  IF position(',' || p_pool || ',' IN seen) > 0
     AND coalesce(current_setting('berth.booking_version_every_row', true), '') <> 'on' THEN
    RETURN;
  END IF;
  -- A pool's first row gets a booking version too (the pool page redraws once).
  INSERT INTO capacity_poolbookingversion (pool_id, version, reservations)
  SELECT p.id, n.v, n.v FROM inventory_pool p, (SELECT nextval('capacity_pool_booking_version_seq') AS v) n
   WHERE p.id = p_pool
  ON CONFLICT (pool_id) DO UPDATE SET reservations = EXCLUDED.reservations;
  PERFORM set_config('berth.reservation_version_bumped',
                     CASE WHEN seen = '' THEN ',' ELSE seen END || p_pool || ',', true);
END $$;

CREATE FUNCTION capacity_reservation_row_bumps() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP <> 'INSERT' THEN
    PERFORM capacity_bump_reservation_version(OLD.pool_id);
  END IF;
  IF TG_OP <> 'DELETE' AND (TG_OP = 'INSERT' OR NEW.pool_id <> OLD.pool_id) THEN
    PERFORM capacity_bump_reservation_version(NEW.pool_id);
  END IF;
  RETURN NULL;
END $$;

CREATE FUNCTION capacity_window_row_bumps() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  r record := CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
BEGIN
  PERFORM capacity_bump_booking_version((SELECT n.pool_id FROM inventory_node n WHERE n.id = r.node_id));
  RETURN NULL;
END $$;

CREATE CONSTRAINT TRIGGER reservation_reservation_version
  AFTER INSERT OR UPDATE OR DELETE ON capacity_reservation DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION capacity_reservation_row_bumps();
CREATE CONSTRAINT TRIGGER maintenancewindownode_booking_version
  AFTER INSERT OR DELETE ON capacity_maintenancewindownode DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION capacity_window_row_bumps();
"""

BACKWARD = """
DROP TRIGGER reservation_reservation_version ON capacity_reservation;
DROP TRIGGER maintenancewindownode_booking_version ON capacity_maintenancewindownode;
DROP FUNCTION capacity_reservation_row_bumps();
DROP FUNCTION capacity_window_row_bumps();
DROP FUNCTION capacity_bump_reservation_version(bigint);
"""


class Migration(migrations.Migration):
    dependencies = [("capacity", "0039_reservation_lent_work_idx")]
    operations = [
        migrations.AddField(
            model_name="poolbookingversion",
            name="reservations",
            field=models.BigIntegerField(blank=True, null=True),
        ),
        migrations.RunSQL(FORWARD, BACKWARD),
    ]
