"""Write the outbox in the transaction of the change: triggers on reservations, nodes, devices, conditions.

The placers, release, repair and drain write reservations and nodes with their own statements, so
only the database sees every change (as capacity's reservation history does). A trigger writes an
event only while some subscription is enabled, and NOTIFYs the worker's delivery thread.
"""

from django.db import migrations

FORWARD = r"""
CREATE FUNCTION webhooks_wanted() RETURNS boolean LANGUAGE sql STABLE AS $$
  SELECT EXISTS (SELECT 1 FROM webhooks_subscription WHERE enabled)
$$;

CREATE FUNCTION webhooks_add(p_type text, p_reservation bigint, p_tenant bigint, p_node bigint, p_reason text)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO webhooks_event (type, at, reservation_id, tenant_id, node_id, reason, fanned_out, xact)
  VALUES (p_type, clock_timestamp(), p_reservation, p_tenant, p_node, coalesce(p_reason, ''), false,
          txid_current());
  PERFORM pg_notify('berth_webhooks', '');
END $$;

CREATE FUNCTION webhooks_condition(p_conditions jsonb, p_type text) RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
  SELECT c FROM jsonb_array_elements(coalesce(p_conditions, '[]'::jsonb)) c WHERE c->>'type' = p_type LIMIT 1
$$;

-- A reservation's status event is the one it has when its transaction commits: inline placement
-- inserts it pending and places it in one transaction, which is one reservation.placed, and a
-- pending reservation's reason, written after its row, lands on its event.
CREATE FUNCTION webhooks_reservation_event() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  kind text;
  why text;
  repaired jsonb;
BEGIN
  IF NOT webhooks_wanted() THEN RETURN NULL; END IF;
  kind := CASE NEW.status
    WHEN 'placed' THEN 'reservation.placed' WHEN 'pending' THEN 'reservation.pending'
    WHEN 'released' THEN 'reservation.released' WHEN 'preempted' THEN 'reservation.preempted' END;
  why := webhooks_condition(NEW.conditions, CASE kind
           WHEN 'reservation.pending' THEN 'Unschedulable' WHEN 'reservation.preempted' THEN 'Preempted'
           ELSE '' END)->>'message';
  IF TG_OP = 'INSERT' OR NEW.status IS DISTINCT FROM OLD.status THEN
    IF kind IS NOT NULL THEN
      UPDATE webhooks_event SET type = kind, reason = coalesce(why, '')
       WHERE reservation_id = NEW.id AND xact = txid_current() AND NOT fanned_out
         AND type IN ('reservation.placed', 'reservation.pending', 'reservation.released', 'reservation.preempted');
      IF NOT FOUND THEN
        PERFORM webhooks_add(kind, NEW.id, NEW.tenant_id, NULL, why);
      END IF;
    END IF;
  ELSE
    UPDATE webhooks_event SET reason = coalesce(why, '')
     WHERE reservation_id = NEW.id AND xact = txid_current() AND NOT fanned_out AND type = kind;
  END IF;
  IF TG_OP = 'UPDATE' THEN
    repaired := webhooks_condition(NEW.conditions, 'Repaired');
    IF repaired IS NOT NULL AND repaired IS DISTINCT FROM webhooks_condition(OLD.conditions, 'Repaired') THEN
      UPDATE webhooks_event SET reason = coalesce(repaired->>'message', '')
       WHERE reservation_id = NEW.id AND xact = txid_current() AND NOT fanned_out AND type = 'reservation.repaired';
      IF NOT FOUND THEN
        PERFORM webhooks_add('reservation.repaired', NEW.id, NEW.tenant_id, NULL, repaired->>'message');
      END IF;
    END IF;
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER webhooks_reservation_event AFTER INSERT OR UPDATE OF status, conditions
  ON capacity_reservation FOR EACH ROW EXECUTE FUNCTION webhooks_reservation_event();

CREATE FUNCTION webhooks_node_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NOT webhooks_wanted() THEN RETURN NULL; END IF;
  IF NEW.cordoned AND NOT OLD.cordoned AND NEW.drain_started_at IS NULL THEN
    PERFORM webhooks_add('node.cordoned', NULL, NULL, NEW.id, NULL);
  END IF;
  IF NEW.drain_started_at IS NOT NULL AND OLD.drain_started_at IS NULL THEN
    PERFORM webhooks_add('node.drained', NULL, NULL, NEW.id, NEW.drain_reason);
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER webhooks_node_event AFTER UPDATE OF cordoned, drain_started_at
  ON inventory_node FOR EACH ROW EXECUTE FUNCTION webhooks_node_event();

-- One node.unhealthy per node and transaction, however many of its devices turned unhealthy.
CREATE FUNCTION webhooks_device_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NOT webhooks_wanted() THEN RETURN NULL; END IF;
  IF NOT EXISTS (SELECT 1 FROM webhooks_event WHERE node_id = NEW.node_id AND type = 'node.unhealthy'
                  AND xact = txid_current()) THEN
    PERFORM webhooks_add('node.unhealthy', NULL, NULL, NEW.node_id, 'a device is no longer healthy');
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER webhooks_device_event AFTER UPDATE OF healthy ON inventory_device
  FOR EACH ROW WHEN (OLD.healthy AND NOT NEW.healthy) EXECUTE FUNCTION webhooks_device_event();

CREATE FUNCTION webhooks_condition_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NOT webhooks_wanted() THEN RETURN NULL; END IF;
  IF NEW.type = 'AgentStale' AND NEW.status = 'True'
     AND (TG_OP = 'INSERT' OR OLD.status IS DISTINCT FROM NEW.status) THEN
    PERFORM webhooks_add('node.stale', NULL, NULL, NEW.node_id, NEW.message);
  ELSIF NEW.type = 'Ready' AND NEW.status <> 'True'
     AND (TG_OP = 'INSERT' OR OLD.status IS DISTINCT FROM NEW.status) THEN
    PERFORM webhooks_add('node.unhealthy', NULL, NULL, NEW.node_id, coalesce(nullif(NEW.message, ''), NEW.reason));
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER webhooks_condition_event AFTER INSERT OR UPDATE OF status ON inventory_nodecondition
  FOR EACH ROW EXECUTE FUNCTION webhooks_condition_event();
"""

BACKWARD = """
DROP TRIGGER IF EXISTS webhooks_condition_event ON inventory_nodecondition;
DROP TRIGGER IF EXISTS webhooks_device_event ON inventory_device;
DROP TRIGGER IF EXISTS webhooks_node_event ON inventory_node;
DROP TRIGGER IF EXISTS webhooks_reservation_event ON capacity_reservation;
DROP FUNCTION IF EXISTS webhooks_condition_event(), webhooks_device_event(), webhooks_node_event(),
  webhooks_reservation_event(), webhooks_condition(jsonb, text),
  webhooks_add(text, bigint, bigint, bigint, text), webhooks_wanted();
"""


class Migration(migrations.Migration):
    dependencies = [
        ("webhooks", "0001_initial"),
        ("capacity", "0013_drop_devicebooking_during_idx"),
        ("inventory", "0011_node_report"),
    ]

    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
