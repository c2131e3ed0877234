"""PoolPolicy and PoolShare move to the policy app (policy/migrations/0001_initial): state only.

The tables stay as they are (capacity_poolpolicy, capacity_poolshare, with their rows, constraints
and the booking-version triggers of 0037); policy's models keep those names (db_table).
"""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("capacity", "0044_pool_rule")]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(name="PoolPolicy"),
                migrations.DeleteModel(name="PoolShare"),
            ],
            database_operations=[],
        ),
    ]
