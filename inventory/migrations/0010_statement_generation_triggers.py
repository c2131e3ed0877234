"""Bump each pool's generation once per statement, not once per row.

The row triggers of 0004 and 0005 upserted the pool's generation row for every inserted device,
link or label: a bulk import of 250 nodes (7,000 links) wrote 7,000 versions of one row in one
transaction, each costlier than the last. Statement triggers with transition tables bump every
pool the statement touched once. What bumps is unchanged: any insert, update or delete of a node,
device, link or label, and a resource row's insert or delete (its resizes keep their row trigger).
A trigger with transition tables takes one event, hence three per table.
"""

from django.db import migrations

PARTS = ("device", "devicelink", "nodelabel", "noderesource")

FORWARD = """
CREATE FUNCTION inventory_bump_pools(p_pools bigint[]) RETURNS void
LANGUAGE sql AS $$
  INSERT INTO inventory_poolgeneration (pool_id, generation)
  SELECT p.id, nextval('inventory_pool_generation_seq')
    FROM (SELECT DISTINCT unnest(p_pools) AS id) AS d JOIN inventory_pool p ON p.id = d.id
   ORDER BY p.id
  ON CONFLICT (pool_id) DO UPDATE SET generation = EXCLUDED.generation
$$;

CREATE FUNCTION inventory_nodes_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM inventory_bump_pools(ARRAY(SELECT pool_id FROM new_rows));
  RETURN NULL;
END $$;
CREATE FUNCTION inventory_nodes_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM inventory_bump_pools(ARRAY(SELECT pool_id FROM old_rows));
  RETURN NULL;
END $$;
CREATE FUNCTION inventory_nodes_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM inventory_bump_pools(ARRAY(SELECT pool_id FROM old_rows UNION SELECT pool_id FROM new_rows));
  RETURN NULL;
END $$;

CREATE FUNCTION inventory_parts_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM inventory_bump_pools(ARRAY(
    SELECT n.pool_id FROM inventory_node n WHERE n.id IN (SELECT node_id FROM new_rows)));
  RETURN NULL;
END $$;
CREATE FUNCTION inventory_parts_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM inventory_bump_pools(ARRAY(
    SELECT n.pool_id FROM inventory_node n WHERE n.id IN (SELECT node_id FROM old_rows)));
  RETURN NULL;
END $$;
CREATE FUNCTION inventory_parts_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM inventory_bump_pools(ARRAY(
    SELECT n.pool_id FROM inventory_node n
     WHERE n.id IN (SELECT node_id FROM old_rows UNION SELECT node_id FROM new_rows)));
  RETURN NULL;
END $$;

DROP TRIGGER node_pool_generation ON inventory_node;
CREATE TRIGGER node_pool_generation_insert AFTER INSERT ON inventory_node
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION inventory_nodes_inserted();
CREATE TRIGGER node_pool_generation_update AFTER UPDATE ON inventory_node
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION inventory_nodes_updated();
CREATE TRIGGER node_pool_generation_delete AFTER DELETE ON inventory_node
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION inventory_nodes_deleted();
"""

for part in PARTS:
    FORWARD += f"""
CREATE TRIGGER {part}_pool_generation_insert AFTER INSERT ON inventory_{part}
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION inventory_parts_inserted();
CREATE TRIGGER {part}_pool_generation_delete AFTER DELETE ON inventory_{part}
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION inventory_parts_deleted();
"""
    if part != "noderesource":  # its resizes keep their row trigger (claims touch other columns)
        FORWARD += f"""
CREATE TRIGGER {part}_pool_generation_update AFTER UPDATE ON inventory_{part}
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION inventory_parts_updated();
"""
FORWARD += """
DROP TRIGGER device_pool_generation ON inventory_device;
DROP TRIGGER devicelink_pool_generation ON inventory_devicelink;
DROP TRIGGER nodelabel_pool_generation ON inventory_nodelabel;
DROP TRIGGER noderesource_pool_generation ON inventory_noderesource;
"""

BACKWARD = """
CREATE TRIGGER node_pool_generation AFTER INSERT OR UPDATE OR DELETE ON inventory_node
  FOR EACH ROW EXECUTE FUNCTION inventory_node_generation();
CREATE TRIGGER device_pool_generation AFTER INSERT OR UPDATE OR DELETE ON inventory_device
  FOR EACH ROW EXECUTE FUNCTION inventory_node_part_generation();
CREATE TRIGGER devicelink_pool_generation AFTER INSERT OR UPDATE OR DELETE ON inventory_devicelink
  FOR EACH ROW EXECUTE FUNCTION inventory_node_part_generation();
CREATE TRIGGER nodelabel_pool_generation AFTER INSERT OR UPDATE OR DELETE ON inventory_nodelabel
  FOR EACH ROW EXECUTE FUNCTION inventory_node_part_generation();
CREATE TRIGGER noderesource_pool_generation AFTER INSERT OR DELETE ON inventory_noderesource
  FOR EACH ROW EXECUTE FUNCTION inventory_node_part_generation();
DROP TRIGGER node_pool_generation_insert ON inventory_node;
DROP TRIGGER node_pool_generation_update ON inventory_node;
DROP TRIGGER node_pool_generation_delete ON inventory_node;
"""
for part in PARTS:
    BACKWARD += f"""
DROP TRIGGER IF EXISTS {part}_pool_generation_insert ON inventory_{part};
DROP TRIGGER IF EXISTS {part}_pool_generation_update ON inventory_{part};
DROP TRIGGER IF EXISTS {part}_pool_generation_delete ON inventory_{part};
"""
BACKWARD += """
DROP FUNCTION inventory_parts_inserted();
DROP FUNCTION inventory_parts_deleted();
DROP FUNCTION inventory_parts_updated();
DROP FUNCTION inventory_nodes_inserted();
DROP FUNCTION inventory_nodes_deleted();
DROP FUNCTION inventory_nodes_updated();
DROP FUNCTION inventory_bump_pools(bigint[]);
"""


class Migration(migrations.Migration):
    dependencies = [("inventory", "0009_node_taint_label_history")]
    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
