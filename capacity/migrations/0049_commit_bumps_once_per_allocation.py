"""A commit's booking version is bumped once, by its allocation, not once per booked device and claim.

The commit (capacity/placers/commit.py) sets `berth.bookings_bumped_by_allocation` for its write
statement only: the allocation it inserts queues the pool's bump (one deferred event), and its
device bookings and scalar claims queue none. Every other write of bookings, or a commit with the
setting absent, queues a bump per row as before (0036, 0048). An inline placement of 4 GPUs and two
scalars queued 7 events, each looking up its pool; now 1 (issue 60).
"""

from django.db import migrations

FLAG = "current_setting('berth.bookings_bumped_by_allocation', true)"

FORWARD = f"""
DROP TRIGGER devicebooking_booking_version ON capacity_devicebooking;
CREATE CONSTRAINT TRIGGER devicebooking_booking_version
  AFTER INSERT OR UPDATE ON capacity_devicebooking DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW WHEN ({FLAG} IS DISTINCT FROM 'on') EXECUTE FUNCTION capacity_device_row_bumps();
DROP TRIGGER scalarclaim_booking_version ON capacity_scalarclaim;
CREATE CONSTRAINT TRIGGER scalarclaim_booking_version
  AFTER INSERT OR UPDATE ON capacity_scalarclaim DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW WHEN ({FLAG} IS DISTINCT FROM 'on') EXECUTE FUNCTION capacity_node_row_bumps();
CREATE CONSTRAINT TRIGGER allocation_booking_version
  AFTER INSERT ON capacity_allocation DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW WHEN ({FLAG} = 'on') EXECUTE FUNCTION capacity_node_row_bumps();
"""

REVERSE = """
DROP TRIGGER allocation_booking_version ON capacity_allocation;
DROP TRIGGER devicebooking_booking_version ON capacity_devicebooking;
CREATE CONSTRAINT TRIGGER devicebooking_booking_version
  AFTER INSERT OR UPDATE ON capacity_devicebooking DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION capacity_device_row_bumps();
DROP TRIGGER scalarclaim_booking_version ON capacity_scalarclaim;
CREATE CONSTRAINT TRIGGER scalarclaim_booking_version
  AFTER INSERT OR UPDATE ON capacity_scalarclaim DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION capacity_node_row_bumps();
"""


class Migration(migrations.Migration):
    dependencies = [("capacity", "0048_cheaper_booking_triggers")]

    operations = [migrations.RunSQL(FORWARD, REVERSE)]
