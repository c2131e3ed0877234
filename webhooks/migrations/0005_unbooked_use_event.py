"""node.unbooked_use once per spell: the insert of its capacity_unbookeduse row."""

from django.db import migrations

FORWARD = r"""
CREATE FUNCTION webhooks_unbooked_use_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NOT webhooks_wanted() THEN RETURN NULL; END IF;
  PERFORM webhooks_add('node.unbooked_use', NULL, NULL, NEW.node_id, NEW.message);
  RETURN NULL;
END $$;
CREATE TRIGGER webhooks_unbooked_use_event AFTER INSERT ON capacity_unbookeduse
  FOR EACH ROW EXECUTE FUNCTION webhooks_unbooked_use_event();
"""

BACKWARD = """
DROP TRIGGER IF EXISTS webhooks_unbooked_use_event ON capacity_unbookeduse;
DROP FUNCTION IF EXISTS webhooks_unbooked_use_event();
"""


class Migration(migrations.Migration):
    dependencies = [
        ("webhooks", "0004_idle_event"),
        ("capacity", "0014_unbooked_use"),
    ]

    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
