"""Bump a pool's generation whenever its nodes, devices, links or labels change.

Row triggers, so every write path (services, admin, bulk, raw SQL) counts. The value comes from a
sequence: it never repeats, even when the transaction that took it rolls back. Placements never
lock these rows, and inventory writers lock a node before its pool's generation row, so this adds
no lock cycle to the order pools → nodes → devices.
"""

from django.db import migrations

FORWARD = """
CREATE SEQUENCE inventory_pool_generation_seq;

CREATE FUNCTION inventory_bump_pool_generation(p_pool bigint) RETURNS void
LANGUAGE sql AS $$
  INSERT INTO inventory_poolgeneration (pool_id, generation)
  SELECT p_pool, nextval('inventory_pool_generation_seq')
   WHERE p_pool IS NOT NULL AND EXISTS (SELECT 1 FROM inventory_pool WHERE id = p_pool)
  ON CONFLICT (pool_id) DO UPDATE SET generation = EXCLUDED.generation
$$;

CREATE FUNCTION inventory_node_generation() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP IN ('UPDATE', 'DELETE') THEN
    PERFORM inventory_bump_pool_generation(OLD.pool_id);
  END IF;
  IF TG_OP IN ('INSERT', 'UPDATE') AND (TG_OP = 'INSERT' OR NEW.pool_id IS DISTINCT FROM OLD.pool_id) THEN
    PERFORM inventory_bump_pool_generation(NEW.pool_id);
  END IF;
  RETURN NULL;
END
$$;

CREATE FUNCTION inventory_node_part_generation() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP IN ('UPDATE', 'DELETE') THEN
    PERFORM inventory_bump_pool_generation((SELECT pool_id FROM inventory_node WHERE id = OLD.node_id));
  END IF;
  IF TG_OP = 'INSERT' OR (TG_OP = 'UPDATE' AND NEW.node_id IS DISTINCT FROM OLD.node_id) THEN
    PERFORM inventory_bump_pool_generation((SELECT pool_id FROM inventory_node WHERE id = NEW.node_id));
  END IF;
  RETURN NULL;
END
$$;

CREATE TRIGGER node_pool_generation AFTER INSERT OR UPDATE OR DELETE ON inventory_node
  FOR EACH ROW EXECUTE FUNCTION inventory_node_generation();
CREATE TRIGGER device_pool_generation AFTER INSERT OR UPDATE OR DELETE ON inventory_device
  FOR EACH ROW EXECUTE FUNCTION inventory_node_part_generation();
CREATE TRIGGER devicelink_pool_generation AFTER INSERT OR UPDATE OR DELETE ON inventory_devicelink
  FOR EACH ROW EXECUTE FUNCTION inventory_node_part_generation();
CREATE TRIGGER nodelabel_pool_generation AFTER INSERT OR UPDATE OR DELETE ON inventory_nodelabel
  FOR EACH ROW EXECUTE FUNCTION inventory_node_part_generation();

INSERT INTO inventory_poolgeneration (pool_id, generation)
SELECT id, nextval('inventory_pool_generation_seq') FROM inventory_pool;
"""

BACKWARD = """
DROP TRIGGER IF EXISTS node_pool_generation ON inventory_node;
DROP TRIGGER IF EXISTS device_pool_generation ON inventory_device;
DROP TRIGGER IF EXISTS devicelink_pool_generation ON inventory_devicelink;
DROP TRIGGER IF EXISTS nodelabel_pool_generation ON inventory_nodelabel;
DROP FUNCTION IF EXISTS inventory_node_part_generation();
DROP FUNCTION IF EXISTS inventory_node_generation();
DROP FUNCTION IF EXISTS inventory_bump_pool_generation(bigint);
DROP SEQUENCE IF EXISTS inventory_pool_generation_seq;
"""


class Migration(migrations.Migration):
    dependencies = [("inventory", "0003_pool_generation")]
    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
