"""A pool's shares and policy bump its booking version at commit, as its bookings do.

The pool page keeps its Shares and Policy sections with the nodes section (capacity/views/
page_cache.py); a share or policy written through the API, the page, a command or the admin
changes the key the same way a booking does: once per pool and transaction, at commit.
"""

from django.db import migrations

FORWARD = """
CREATE FUNCTION capacity_pool_row_bumps() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP <> 'INSERT' THEN
    PERFORM capacity_bump_booking_version(OLD.pool_id);
  END IF;
  IF TG_OP <> 'DELETE' THEN
    PERFORM capacity_bump_booking_version(NEW.pool_id);
  END IF;
  RETURN NULL;
END $$;

CREATE CONSTRAINT TRIGGER poolshare_booking_version
  AFTER INSERT OR UPDATE OR DELETE ON capacity_poolshare DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION capacity_pool_row_bumps();
CREATE CONSTRAINT TRIGGER poolpolicy_booking_version
  AFTER INSERT OR UPDATE OR DELETE ON capacity_poolpolicy DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION capacity_pool_row_bumps();
"""

BACKWARD = """
DROP TRIGGER poolshare_booking_version ON capacity_poolshare;
DROP TRIGGER poolpolicy_booking_version ON capacity_poolpolicy;
DROP FUNCTION capacity_pool_row_bumps();
"""


class Migration(migrations.Migration):
    dependencies = [("capacity", "0036_pool_booking_version")]
    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
