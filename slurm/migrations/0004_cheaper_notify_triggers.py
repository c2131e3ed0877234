"""The notify triggers ask whether a pool is bridged without replanning a SQL function (issue 60).

`slurm_bridged` was a SQL function: not inlined (its EXISTS), it was parsed and planned again at
every trigger call, three a placement (0.05 ms each). As PL/pgSQL its statement's plan is kept for
the session; the allocation trigger joins the bridged pools itself. Same notifications.
"""

from django.db import migrations

FORWARD = r"""
CREATE OR REPLACE FUNCTION slurm_bridged(p_pool bigint) RETURNS boolean LANGUAGE plpgsql STABLE AS $$
BEGIN
  RETURN EXISTS (SELECT 1 FROM slurm_bridgedpool WHERE pool_id = p_pool AND enabled);
END $$;

CREATE OR REPLACE FUNCTION slurm_allocation_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.reservation_id IS NOT NULL AND EXISTS (
       SELECT 1 FROM inventory_node n JOIN slurm_bridgedpool b ON b.pool_id = n.pool_id AND b.enabled
        WHERE n.id = NEW.node_id) THEN
    PERFORM pg_notify('berth_slurm', 'allocation');
  END IF;
  RETURN NULL;
END $$;
"""

BACKWARD = r"""
CREATE OR REPLACE FUNCTION slurm_bridged(p_pool bigint) RETURNS boolean LANGUAGE sql STABLE AS $$
  SELECT EXISTS (SELECT 1 FROM slurm_bridgedpool WHERE pool_id = p_pool AND enabled)
$$;

CREATE OR REPLACE FUNCTION slurm_allocation_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.reservation_id IS NOT NULL AND EXISTS (
       SELECT 1 FROM inventory_node n WHERE n.id = NEW.node_id AND slurm_bridged(n.pool_id)) THEN
    PERFORM pg_notify('berth_slurm', 'allocation');
  END IF;
  RETURN NULL;
END $$;
"""


class Migration(migrations.Migration):
    dependencies = [("slurm", "0003_pool_page_bumps")]

    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
