"""Keep nodes.no_schedule_reasons in step with taints and conditions, in the same transaction.

A trigger rather than model hooks, so bulk writes, admin deletes and raw SQL cannot skip it.
Reasons: each NoSchedule/NoExecute taint as `<key>=<value>` (or `<key>`), sorted by key; then
`NotReady` for a Ready condition that is not True, and `<Type>` for any other condition that is True.
"""

from django.db import migrations

FORWARD = """
CREATE FUNCTION inventory_node_no_schedule_reasons(p_node bigint) RETURNS text[]
LANGUAGE sql STABLE AS $$
  SELECT coalesce(array_agg(reason ORDER BY ord, reason), '{}')
  FROM (
    SELECT 0 AS ord, CASE WHEN t.value = '' THEN t.key ELSE t.key || '=' || t.value END AS reason
      FROM inventory_nodetaint t
     WHERE t.node_id = p_node AND t.effect IN ('NoSchedule', 'NoExecute')
    UNION ALL
    SELECT 1, CASE WHEN c.type = 'Ready' THEN 'NotReady' ELSE c.type END
      FROM inventory_nodecondition c
     WHERE c.node_id = p_node
       AND ((c.type = 'Ready' AND c.status <> 'True') OR (c.type <> 'Ready' AND c.status = 'True'))
  ) r
$$;

CREATE FUNCTION inventory_refresh_no_schedule_reasons() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP IN ('UPDATE', 'DELETE') THEN
    UPDATE inventory_node SET no_schedule_reasons = inventory_node_no_schedule_reasons(OLD.node_id)
     WHERE id = OLD.node_id
       AND no_schedule_reasons IS DISTINCT FROM inventory_node_no_schedule_reasons(OLD.node_id);
  END IF;
  IF TG_OP IN ('INSERT', 'UPDATE') THEN
    UPDATE inventory_node SET no_schedule_reasons = inventory_node_no_schedule_reasons(NEW.node_id)
     WHERE id = NEW.node_id
       AND no_schedule_reasons IS DISTINCT FROM inventory_node_no_schedule_reasons(NEW.node_id);
  END IF;
  RETURN NULL;
END
$$;

CREATE TRIGGER nodetaint_no_schedule_reasons
  AFTER INSERT OR UPDATE OR DELETE ON inventory_nodetaint
  FOR EACH ROW EXECUTE FUNCTION inventory_refresh_no_schedule_reasons();
CREATE TRIGGER nodecondition_no_schedule_reasons
  AFTER INSERT OR UPDATE OR DELETE ON inventory_nodecondition
  FOR EACH ROW EXECUTE FUNCTION inventory_refresh_no_schedule_reasons();
"""

BACKWARD = """
DROP TRIGGER IF EXISTS nodetaint_no_schedule_reasons ON inventory_nodetaint;
DROP TRIGGER IF EXISTS nodecondition_no_schedule_reasons ON inventory_nodecondition;
DROP FUNCTION IF EXISTS inventory_refresh_no_schedule_reasons();
DROP FUNCTION IF EXISTS inventory_node_no_schedule_reasons(bigint);
"""


class Migration(migrations.Migration):
    dependencies = [("inventory", "0001_initial")]
    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
