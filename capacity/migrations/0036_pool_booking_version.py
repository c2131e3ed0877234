"""A per-pool booking version bumped at commit, and the database cache's table.

Row-level constraint triggers, deferred to commit (a delete only of a booking not yet ended): each remembers in a transaction-local setting
which pools it bumped, so a booking of 8 GPUs (or a history move of thousands of rows) upserts each
pool's row once. Bumping at commit, not per statement, keeps the row's lock for the length of the
commit only: concurrent bookings in one pool do not wait on each other's transactions. Values come
from a sequence, so a number never repeats (not after a rollback, nor after the row is deleted).
"""

from django.core.management import call_command
from django.db import migrations, models

FORWARD = """
CREATE SEQUENCE capacity_pool_booking_version_seq;

CREATE FUNCTION capacity_bump_booking_version(p_pool bigint) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  seen text := coalesce(current_setting('berth.booking_version_bumped', true), '');
BEGIN
  IF p_pool IS NULL THEN
    RETURN;
  END IF;
  -- Tests that never commit run these triggers at each statement and bump at every row.
  IF position(',' || p_pool || ',' IN seen) > 0
     AND coalesce(current_setting('berth.booking_version_every_row', true), '') <> 'on' THEN
    RETURN;
  END IF;
  INSERT INTO capacity_poolbookingversion (pool_id, version)
  SELECT p.id, nextval('capacity_pool_booking_version_seq') FROM inventory_pool p WHERE p.id = p_pool
  ON CONFLICT (pool_id) DO UPDATE SET version = EXCLUDED.version;
  PERFORM set_config('berth.booking_version_bumped',
                     CASE WHEN seen = '' THEN ',' ELSE seen END || p_pool || ',', true);
END $$;

CREATE FUNCTION capacity_device_row_bumps() RETURNS trigger LANGUAGE plpgsql AS $$
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

CREATE FUNCTION capacity_node_row_bumps() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  r record := CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
BEGIN
  PERFORM capacity_bump_booking_version((SELECT n.pool_id FROM inventory_node n WHERE n.id = r.node_id));
  IF TG_OP = 'UPDATE' AND OLD.node_id <> NEW.node_id THEN
    PERFORM capacity_bump_booking_version((SELECT n.pool_id FROM inventory_node n WHERE n.id = OLD.node_id));
  END IF;
  RETURN NULL;
END $$;

CREATE CONSTRAINT TRIGGER devicebooking_booking_version
  AFTER INSERT OR UPDATE ON capacity_devicebooking DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION capacity_device_row_bumps();
CREATE CONSTRAINT TRIGGER scalarclaim_booking_version
  AFTER INSERT OR UPDATE ON capacity_scalarclaim DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION capacity_node_row_bumps();
-- A booking that ended before the transaction began is drawn nowhere a version keys: moving it
-- to history (thousands of rows at a time) queues nothing.
CREATE CONSTRAINT TRIGGER devicebooking_booking_version_delete
  AFTER DELETE ON capacity_devicebooking DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW WHEN (upper(OLD.during) > now()) EXECUTE FUNCTION capacity_device_row_bumps();
CREATE CONSTRAINT TRIGGER scalarclaim_booking_version_delete
  AFTER DELETE ON capacity_scalarclaim DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW WHEN (upper(OLD.during) > now()) EXECUTE FUNCTION capacity_node_row_bumps();
CREATE CONSTRAINT TRIGGER nodetaint_booking_version
  AFTER INSERT OR UPDATE OR DELETE ON inventory_nodetaint DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION capacity_node_row_bumps();
"""

BACKWARD = """
DROP TRIGGER devicebooking_booking_version ON capacity_devicebooking;
DROP TRIGGER scalarclaim_booking_version ON capacity_scalarclaim;
DROP TRIGGER devicebooking_booking_version_delete ON capacity_devicebooking;
DROP TRIGGER scalarclaim_booking_version_delete ON capacity_scalarclaim;
DROP TRIGGER nodetaint_booking_version ON inventory_nodetaint;
DROP FUNCTION capacity_device_row_bumps();
DROP FUNCTION capacity_node_row_bumps();
DROP FUNCTION capacity_bump_booking_version(bigint);
DROP SEQUENCE capacity_pool_booking_version_seq;
"""


def create_cache_table(apps, schema_editor):
    """Create the database cache's table (settings.CACHES), as `createcachetable` would."""
    call_command("createcachetable", database=schema_editor.connection.alias, verbosity=0)


class Migration(migrations.Migration):
    dependencies = [
        ("capacity", "0035_booked_hours"),
        ("inventory", "0015_sample_folds_to_usage"),
    ]
    operations = [
        migrations.CreateModel(
            name="PoolBookingVersion",
            fields=[
                (
                    "pool",
                    models.OneToOneField(
                        on_delete=models.deletion.CASCADE,
                        primary_key=True,
                        related_name="booking_version",
                        serialize=False,
                        to="inventory.pool",
                    ),
                ),
                ("version", models.BigIntegerField()),
            ],
        ),
        migrations.RunSQL(FORWARD, BACKWARD),
        migrations.RunPython(create_cache_table, migrations.RunPython.noop),
    ]
