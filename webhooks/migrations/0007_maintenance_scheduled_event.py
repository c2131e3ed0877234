"""node.maintenance_scheduled: one event per node of a maintenance window, when it is scheduled."""

from django.db import migrations

# The reason reads as the placer's explain names the window: "window 7, 2026-12-08T00:00Z to
# 2026-12-08T12:00Z: firmware" (capacity.placement.maintenance.window_reason).
FORWARD = r"""
CREATE FUNCTION webhooks_stamp(p_at timestamptz) RETURNS text LANGUAGE sql IMMUTABLE AS $$
  SELECT to_char(p_at AT TIME ZONE 'UTC',
                 CASE WHEN date_part('second', p_at AT TIME ZONE 'UTC') = 0
                      THEN 'YYYY-MM-DD"T"HH24:MI"Z"' ELSE 'YYYY-MM-DD"T"HH24:MI:SS"Z"' END)
$$;
CREATE FUNCTION webhooks_maintenance_scheduled_event() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  v_reason text;
BEGIN
  IF NOT webhooks_wanted() THEN RETURN NULL; END IF;
  SELECT 'window ' || w.id || ', ' || webhooks_stamp(w.starts_at) || ' to ' || webhooks_stamp(w.ends_at)
         || CASE WHEN w.reason <> '' THEN ': ' || w.reason ELSE '' END
    INTO v_reason FROM capacity_maintenancewindow w WHERE w.id = NEW.window_id;
  PERFORM webhooks_add('node.maintenance_scheduled', NULL, NULL, NEW.node_id, v_reason);
  RETURN NULL;
END $$;
CREATE TRIGGER webhooks_maintenance_scheduled_event AFTER INSERT ON capacity_maintenancewindownode
  FOR EACH ROW EXECUTE FUNCTION webhooks_maintenance_scheduled_event();
"""

BACKWARD = """
DROP TRIGGER IF EXISTS webhooks_maintenance_scheduled_event ON capacity_maintenancewindownode;
DROP FUNCTION IF EXISTS webhooks_maintenance_scheduled_event();
DROP FUNCTION IF EXISTS webhooks_stamp(timestamptz);
"""


class Migration(migrations.Migration):
    dependencies = [
        ("webhooks", "0006_preempt_notice_event"),
        ("capacity", "0031_maintenance_windows"),
    ]

    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
