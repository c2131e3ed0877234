"""Wake the bridge after a commit that changes what Slurm should hold: NOTIFY berth_slurm.

A bridged pool's booking (inserted, its status, window or conditions changed), an allocation's
release (a drain or repair moves a booking to other nodes), and any maintenance window. NOTIFY is
sent at commit and dropped on rollback, so the pass never sees a booking that did not happen.
"""

from django.db import migrations

FORWARD = r"""
CREATE FUNCTION slurm_bridged(p_pool bigint) RETURNS boolean LANGUAGE sql STABLE AS $$
  SELECT EXISTS (SELECT 1 FROM slurm_bridgedpool WHERE pool_id = p_pool AND enabled)
$$;

CREATE FUNCTION slurm_reservation_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF slurm_bridged(NEW.pool_id) THEN PERFORM pg_notify('berth_slurm', NEW.pool_id::text); END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER slurm_reservation_changed AFTER INSERT OR UPDATE OF status, starts_at, ends_at, conditions
  ON capacity_reservation FOR EACH ROW EXECUTE FUNCTION slurm_reservation_changed();

CREATE FUNCTION slurm_allocation_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.reservation_id IS NOT NULL AND EXISTS (
       SELECT 1 FROM inventory_node n WHERE n.id = NEW.node_id AND slurm_bridged(n.pool_id)) THEN
    PERFORM pg_notify('berth_slurm', 'allocation');
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER slurm_allocation_changed AFTER INSERT OR UPDATE OF released_at, ends_at
  ON capacity_allocation FOR EACH ROW EXECUTE FUNCTION slurm_allocation_changed();

CREATE FUNCTION slurm_window_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('berth_slurm', 'window');
  RETURN NULL;
END $$;
CREATE TRIGGER slurm_window_changed AFTER INSERT OR UPDATE OF starts_at, ends_at OR DELETE
  ON capacity_maintenancewindow FOR EACH ROW EXECUTE FUNCTION slurm_window_changed();
"""

BACKWARD = """
DROP TRIGGER IF EXISTS slurm_window_changed ON capacity_maintenancewindow;
DROP TRIGGER IF EXISTS slurm_allocation_changed ON capacity_allocation;
DROP TRIGGER IF EXISTS slurm_reservation_changed ON capacity_reservation;
DROP FUNCTION IF EXISTS slurm_window_changed(), slurm_allocation_changed(), slurm_reservation_changed(),
  slurm_bridged(bigint);
"""


class Migration(migrations.Migration):
    dependencies = [("slurm", "0001_initial")]

    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
