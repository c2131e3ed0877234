"""Less trigger work per placement, with the same rows and versions (issue 60).

- The BEFORE trigger that keeps `updated_at` at or after `created_at` (0021) runs its function only
  when the row needs it (a WHEN clause): a placement's insert and update call nothing.
- The version bumps (0036, 0040) look at their transaction's set of pools already bumped before
  they call the bump, so a booking's second to eighth device row returns after one lookup instead of
  a second statement and a nested call.
- A reservation's update queues no bump when this transaction inserted or updated the row at its top
  level and the pool stays: that earlier event bumps the pool at the same commit (the placement's
  insert, then its update to placed). Tests that bump at every row (berth.booking_version_every_row)
  still queue every update.
"""

from django.db import migrations

# True when the pool is not yet in the transaction's set (0036's check, as a plain expression: an
# IF evaluates it without a statement of its own), or when every row bumps (tests).
_DUE = """(position(',' || {pool} || ',' IN coalesce(current_setting('berth.{seen}', true), '')) = 0
       OR coalesce(current_setting('berth.booking_version_every_row', true), '') = 'on')"""


def _due(pool: str, seen: str = "booking_version_bumped") -> str:
    return _DUE.format(pool=pool, seen=seen)


FORWARD = f"""
DROP TRIGGER capacity_reservation_changed_after_created ON capacity_reservation;
CREATE TRIGGER capacity_reservation_changed_after_created BEFORE INSERT OR UPDATE
  ON capacity_reservation FOR EACH ROW WHEN (NEW.updated_at < NEW.created_at)
  EXECUTE FUNCTION capacity_reservation_changed_after_created();

CREATE OR REPLACE FUNCTION capacity_device_row_bumps() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  r record := CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
  pool bigint;
BEGIN
  SELECT n.pool_id INTO pool FROM inventory_device d JOIN inventory_node n ON n.id = d.node_id WHERE d.id = r.device_id;
  IF pool IS NOT NULL AND {_due("pool")} THEN
    PERFORM capacity_bump_booking_version(pool);
  END IF;
  IF TG_OP = 'UPDATE' AND OLD.device_id <> NEW.device_id THEN
    PERFORM capacity_bump_booking_version(
      (SELECT n.pool_id FROM inventory_device d JOIN inventory_node n ON n.id = d.node_id WHERE d.id = OLD.device_id));
  END IF;
  RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION capacity_node_row_bumps() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  r record := CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
  pool bigint;
BEGIN
  SELECT n.pool_id INTO pool FROM inventory_node n WHERE n.id = r.node_id;
  IF pool IS NOT NULL AND {_due("pool")} THEN
    PERFORM capacity_bump_booking_version(pool);
  END IF;
  IF TG_OP = 'UPDATE' AND OLD.node_id <> NEW.node_id THEN
    PERFORM capacity_bump_booking_version((SELECT n.pool_id FROM inventory_node n WHERE n.id = OLD.node_id));
  END IF;
  RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION capacity_reservation_row_bumps() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP <> 'INSERT' AND {_due("OLD.pool_id", "reservation_version_bumped")} THEN
    PERFORM capacity_bump_reservation_version(OLD.pool_id);
  END IF;
  IF TG_OP <> 'DELETE' AND (TG_OP = 'INSERT' OR NEW.pool_id <> OLD.pool_id)
     AND {_due("NEW.pool_id", "reservation_version_bumped")} THEN
    PERFORM capacity_bump_reservation_version(NEW.pool_id);
  END IF;
  RETURN NULL;
END $$;

DROP TRIGGER reservation_reservation_version ON capacity_reservation;
CREATE CONSTRAINT TRIGGER reservation_reservation_version
  AFTER INSERT OR DELETE ON capacity_reservation DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION capacity_reservation_row_bumps();
-- OLD.xmin is the top-level transaction's own id only when this transaction wrote that row version
-- outside any savepoint: its event (queued there, so never rolled back alone) bumps the pool.
CREATE CONSTRAINT TRIGGER reservation_reservation_version_update
  AFTER UPDATE ON capacity_reservation DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW WHEN (OLD.xmin <> pg_current_xact_id()::xid OR NEW.pool_id <> OLD.pool_id
                     OR coalesce(current_setting('berth.booking_version_every_row', true), '') = 'on')
  EXECUTE FUNCTION capacity_reservation_row_bumps();
"""

BACKWARD = """
DROP TRIGGER reservation_reservation_version_update ON capacity_reservation;
DROP TRIGGER reservation_reservation_version ON capacity_reservation;
CREATE CONSTRAINT TRIGGER reservation_reservation_version
  AFTER INSERT OR UPDATE OR DELETE ON capacity_reservation DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION capacity_reservation_row_bumps();

CREATE OR REPLACE FUNCTION capacity_reservation_row_bumps() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP <> 'INSERT' THEN
    PERFORM capacity_bump_reservation_version(OLD.pool_id);
  END IF;
  IF TG_OP <> 'DELETE' AND (TG_OP = 'INSERT' OR NEW.pool_id <> OLD.pool_id) THEN
    PERFORM capacity_bump_reservation_version(NEW.pool_id);
  END IF;
  RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION capacity_device_row_bumps() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  r record := CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
BEGIN
  PERFORM capacity_bump_booking_version(
    (SELECT n.pool_id FROM inventory_device d JOIN inventory_node n ON n.id = d.node_id WHERE d.id = r.device_id));
  IF TG_OP = 'UPDATE' AND OLD.device_id <> NEW.device_id THEN
    PERFORM capacity_bump_booking_version(
      (SELECT n.pool_id FROM inventory_device d JOIN inventory_node n ON n.id = d.node_id WHERE d.id = OLD.device_id));
  END IF;
  RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION capacity_node_row_bumps() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  r record := CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
BEGIN
  PERFORM capacity_bump_booking_version((SELECT n.pool_id FROM inventory_node n WHERE n.id = r.node_id));
  IF TG_OP = 'UPDATE' AND OLD.node_id <> NEW.node_id THEN
    PERFORM capacity_bump_booking_version((SELECT n.pool_id FROM inventory_node n WHERE n.id = OLD.node_id));
  END IF;
  RETURN NULL;
END $$;

DROP TRIGGER capacity_reservation_changed_after_created ON capacity_reservation;
CREATE TRIGGER capacity_reservation_changed_after_created BEFORE INSERT OR UPDATE
  ON capacity_reservation FOR EACH ROW EXECUTE FUNCTION capacity_reservation_changed_after_created();
"""


class Migration(migrations.Migration):
    dependencies = [("capacity", "0047_booked_hours_to_usage")]

    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
