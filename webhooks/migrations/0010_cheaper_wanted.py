"""Whether any subscription is enabled, asked without replanning a SQL function (issue 60).

`webhooks_wanted` was a SQL function: not inlined (its EXISTS), it was parsed and planned again at
every trigger call, two a placement. As PL/pgSQL its statement's plan is kept for the session.
"""

from django.db import migrations

FORWARD = r"""
CREATE OR REPLACE FUNCTION webhooks_wanted() RETURNS boolean LANGUAGE plpgsql STABLE AS $$
BEGIN
  RETURN EXISTS (SELECT 1 FROM webhooks_subscription WHERE enabled);
END $$;
"""

BACKWARD = r"""
CREATE OR REPLACE FUNCTION webhooks_wanted() RETURNS boolean LANGUAGE sql STABLE AS $$
  SELECT EXISTS (SELECT 1 FROM webhooks_subscription WHERE enabled)
$$;
"""


class Migration(migrations.Migration):
    dependencies = [("webhooks", "0009_maintenance_notice_events")]

    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
