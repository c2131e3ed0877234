"""A team made, renamed (its slug) or deleted bumps every pool's booking version at commit.

The pool page keeps its Shares section with the tenants its form offers (capacity/views/
page_cache.py); a team made on the team page (policy/teams.py), in the admin or by a command
shows in every pool's form on the next page, as a share or a booking does. Teams change rarely:
each change redraws every pool page once.
"""

from django.db import migrations

FORWARD = """
CREATE FUNCTION capacity_tenant_row_bumps() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM capacity_bump_booking_version(p.id) FROM inventory_pool p;
  RETURN NULL;
END $$;

CREATE CONSTRAINT TRIGGER tenant_booking_versions
  AFTER INSERT OR DELETE OR UPDATE OF slug ON inventory_tenant DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION capacity_tenant_row_bumps();
"""

BACKWARD = """
DROP TRIGGER tenant_booking_versions ON inventory_tenant;
DROP FUNCTION capacity_tenant_row_bumps();
"""


class Migration(migrations.Migration):
    dependencies = [("capacity", "0042_poolpolicy_policy_webhook_concurrency"), ("inventory", "0001_initial")]
    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
