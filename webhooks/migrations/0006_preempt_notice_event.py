"""reservation.preempted at the notice: when a PreemptAt condition is written (capacity.placers.notice).

Spot work given notice stays placed until its preemptAt; the event goes out when the notice is
given, and the status change to preempted at preemptAt sends none (it said nothing new).
"""

from django.db import migrations

FORWARD = r"""
CREATE OR REPLACE FUNCTION webhooks_reservation_event() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  kind text;
  why text;
  repaired jsonb;
  idle jsonb;
  notice jsonb;
BEGIN
  IF NOT webhooks_wanted() THEN RETURN NULL; END IF;
  kind := CASE NEW.status
    WHEN 'placed' THEN 'reservation.placed' WHEN 'pending' THEN 'reservation.pending'
    WHEN 'released' THEN 'reservation.released' WHEN 'preempted' THEN 'reservation.preempted' END;
  why := webhooks_condition(NEW.conditions, CASE kind
           WHEN 'reservation.pending' THEN 'Unschedulable' WHEN 'reservation.preempted' THEN 'Preempted'
           WHEN 'reservation.released' THEN 'Released'
           ELSE '' END)->>'message';
  IF TG_OP = 'UPDATE' AND kind = 'reservation.preempted'
     AND webhooks_condition(OLD.conditions, 'PreemptAt') IS NOT NULL THEN
    kind := NULL;  -- said at the notice (below): the notice running out says nothing new
  END IF;
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
    notice := webhooks_condition(NEW.conditions, 'PreemptAt');
    IF notice IS NOT NULL AND webhooks_condition(OLD.conditions, 'PreemptAt') IS NULL THEN
      PERFORM webhooks_add('reservation.preempted', NEW.id, NEW.tenant_id, NULL, notice->>'message');
    END IF;
    idle := webhooks_condition(NEW.conditions, 'Idle');
    IF idle IS NOT NULL AND webhooks_condition(OLD.conditions, 'Idle') IS NULL THEN
      PERFORM webhooks_add('reservation.idle', NEW.id, NEW.tenant_id, NULL, idle->>'message');
    END IF;
  END IF;
  RETURN NULL;
END $$;
"""

BACKWARD = migrations.RunSQL.noop


class Migration(migrations.Migration):
    dependencies = [("webhooks", "0005_unbooked_use_event")]

    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
