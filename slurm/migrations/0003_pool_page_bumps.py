"""A pool's bridge settings and accounts bump its booking version at commit, as its shares and policy do.

The pool page keeps its settings sections with the nodes section (capacity/views/page_cache.py); a
bridge or account written through the API, the page or the admin changes the key. A pass writing
its outcome (last_pass_at, problems) does not: the page reads that fresh.
"""

from django.db import migrations

FORWARD = """
CREATE CONSTRAINT TRIGGER slurmbridgedpool_booking_version
  AFTER INSERT OR DELETE OR UPDATE OF enabled, accounts_required, whole_nodes_only ON slurm_bridgedpool DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION capacity_pool_row_bumps();
CREATE CONSTRAINT TRIGGER slurmaccount_booking_version
  AFTER INSERT OR UPDATE OR DELETE ON slurm_slurmaccount DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION capacity_pool_row_bumps();
"""

BACKWARD = """
DROP TRIGGER slurmaccount_booking_version ON slurm_slurmaccount;
DROP TRIGGER slurmbridgedpool_booking_version ON slurm_bridgedpool;
"""


class Migration(migrations.Migration):
    dependencies = [
        ("slurm", "0002_notify_triggers"),
        ("capacity", "0037_pool_settings_bump_version"),
        ("capacity", "0044_pool_rule"),
    ]
    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
