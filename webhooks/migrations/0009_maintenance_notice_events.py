"""reservation.maintenance_scheduled and .maintenance_cancelled (docs/repair-and-drain.md).

A booking a maintenance window will take GPUs from carries a MaintenanceScheduled condition
(capacity.services.maintenance_notice): its turning true, or naming another window, is
maintenance_scheduled (as is a new start); a deleted window turns it False (WindowCancelled, or
WindowChanged for a window changed in place that no longer overlaps it), maintenance_cancelled.
A booking moved off, or a window that ended, drops it and says nothing more (repaired says a move).
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
  approved jsonb;
  window_now jsonb;
  window_was jsonb;
BEGIN
  IF NOT webhooks_wanted() THEN RETURN NULL; END IF;
  kind := CASE NEW.status
    WHEN 'placed' THEN 'reservation.placed' WHEN 'pending' THEN 'reservation.pending'
    WHEN 'released' THEN 'reservation.released' WHEN 'preempted' THEN 'reservation.preempted' END;
  why := webhooks_condition(NEW.conditions, CASE kind
           WHEN 'reservation.pending' THEN 'Unschedulable' WHEN 'reservation.preempted' THEN 'Preempted'
           WHEN 'reservation.released' THEN 'Released'
           ELSE '' END)->>'message';
  -- Approvals (capacity.services.approvals): placed but held says awaiting_approval, not placed;
  -- a denial says denied, not released.
  IF kind = 'reservation.placed' AND webhooks_condition(NEW.conditions, 'AwaitingApproval') IS NOT NULL THEN
    kind := 'reservation.awaiting_approval';
    why := webhooks_condition(NEW.conditions, 'AwaitingApproval')->>'message';
  ELSIF kind = 'reservation.released'
        AND webhooks_condition(NEW.conditions, 'Released')->>'reason' = 'ApprovalDenied' THEN
    kind := 'reservation.denied';
  END IF;
  IF TG_OP = 'UPDATE' AND kind = 'reservation.preempted'
     AND webhooks_condition(OLD.conditions, 'PreemptAt') IS NOT NULL THEN
    kind := NULL;  -- said at the notice (below): the notice running out says nothing new
  END IF;
  IF TG_OP = 'INSERT' OR NEW.status IS DISTINCT FROM OLD.status THEN
    IF kind IS NOT NULL THEN
      UPDATE webhooks_event SET type = kind, reason = coalesce(why, '')
       WHERE reservation_id = NEW.id AND xact = txid_current() AND NOT fanned_out
         AND type IN ('reservation.placed', 'reservation.pending', 'reservation.released', 'reservation.preempted',
                      'reservation.awaiting_approval', 'reservation.denied');
      IF NOT FOUND THEN
        PERFORM webhooks_add(kind, NEW.id, NEW.tenant_id, NULL, why);
      END IF;
    END IF;
  ELSIF kind = 'reservation.awaiting_approval'
        AND webhooks_condition(OLD.conditions, 'AwaitingApproval') IS NULL
        -- Once per reservation: a repair's move clears the conditions and puts them back.
        AND NOT EXISTS (SELECT 1 FROM webhooks_event e
                         WHERE e.reservation_id = NEW.id AND e.type = 'reservation.awaiting_approval') THEN
    -- Held in the transaction that placed it: the placed event of this transaction becomes this one.
    UPDATE webhooks_event SET type = kind, reason = coalesce(why, '')
     WHERE reservation_id = NEW.id AND xact = txid_current() AND NOT fanned_out
       AND type IN ('reservation.placed', 'reservation.pending');
    IF NOT FOUND THEN
      PERFORM webhooks_add(kind, NEW.id, NEW.tenant_id, NULL, why);
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
    approved := webhooks_condition(NEW.conditions, 'Approved');
    IF approved IS NOT NULL AND webhooks_condition(OLD.conditions, 'Approved') IS NULL
       AND NOT EXISTS (SELECT 1 FROM webhooks_event e
                        WHERE e.reservation_id = NEW.id AND e.type = 'reservation.approved') THEN
      PERFORM webhooks_add('reservation.approved', NEW.id, NEW.tenant_id, NULL, approved->>'message');
    END IF;
    -- A maintenance window will take its GPUs (capacity.services.maintenance_notice): said when
    -- the condition turns true, names another window or another start; its status False (a window
    -- deleted, or changed so that it no longer overlaps) says so.
    window_now := webhooks_condition(NEW.conditions, 'MaintenanceScheduled');
    window_was := webhooks_condition(OLD.conditions, 'MaintenanceScheduled');
    IF window_now->>'status' = 'True'
       AND (window_was IS NULL OR window_was->>'status' <> 'True' OR window_was->'window' IS DISTINCT FROM window_now->'window'
            OR window_was->'at' IS DISTINCT FROM window_now->'at') THEN
      PERFORM webhooks_add('reservation.maintenance_scheduled', NEW.id, NEW.tenant_id, NULL, window_now->>'message');
    ELSIF window_now->>'status' = 'False' AND window_was->>'status' = 'True' THEN
      PERFORM webhooks_add('reservation.maintenance_cancelled', NEW.id, NEW.tenant_id, NULL, window_now->>'message');
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
    dependencies = [("webhooks", "0008_approval_events")]

    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
