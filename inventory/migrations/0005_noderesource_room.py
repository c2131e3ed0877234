"""Index scalar room, and bump the pool's generation when a node gains or loses a resource row.

The placer's shortlist asks for the nodes short of a claim (`room < claim`); an index on
(resource, room) makes that cost what it returns. Which resource rows a node has, and their size,
are inventory like its devices: the pool index keeps them per generation. Claims move only
`allocated`, which must not bump the generation, so the trigger skips that column.
"""

from django.db import migrations

FORWARD = """
CREATE INDEX noderesource_room ON inventory_noderesource
  (resource, (floor(allocatable * ratio + 1e-9) - allocated));

CREATE TRIGGER noderesource_pool_generation AFTER INSERT OR DELETE ON inventory_noderesource
  FOR EACH ROW EXECUTE FUNCTION inventory_node_part_generation();
CREATE TRIGGER noderesource_size_pool_generation AFTER UPDATE OF node_id, resource, allocatable, ratio
  ON inventory_noderesource
  FOR EACH ROW WHEN (OLD.node_id IS DISTINCT FROM NEW.node_id OR OLD.resource IS DISTINCT FROM NEW.resource
                     OR OLD.allocatable IS DISTINCT FROM NEW.allocatable OR OLD.ratio IS DISTINCT FROM NEW.ratio)
  EXECUTE FUNCTION inventory_node_part_generation();
"""

BACKWARD = """
DROP TRIGGER IF EXISTS noderesource_size_pool_generation ON inventory_noderesource;
DROP TRIGGER IF EXISTS noderesource_pool_generation ON inventory_noderesource;
DROP INDEX IF EXISTS noderesource_room;
"""


class Migration(migrations.Migration):
    dependencies = [("inventory", "0004_pool_generation_triggers")]
    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
