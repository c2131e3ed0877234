"""A reservation's last change never reads before its creation.

Writers stamp `updated_at` with their own `now`: the request's moment, taken before the insert
stamps `created_at`, or a clock set back (the demo books past windows as if at their start, and
marks idle as of a whole minute). A BEFORE trigger keeps every path (the ORM, the placers' own
statements, repair) at or after `created_at`; the condition history's `at` is `updated_at`, so its
times follow. Rows written before are mended.
"""

from django.db import migrations

SQL = """
CREATE FUNCTION capacity_reservation_changed_after_created() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.updated_at < NEW.created_at THEN
    NEW.updated_at := NEW.created_at;
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER capacity_reservation_changed_after_created BEFORE INSERT OR UPDATE
  ON capacity_reservation FOR EACH ROW EXECUTE FUNCTION capacity_reservation_changed_after_created();
UPDATE capacity_reservationevent e SET at = r.created_at
  FROM capacity_reservation_all r WHERE r.id = e.reservation_id AND e.at < r.created_at;
UPDATE capacity_reservation SET updated_at = created_at WHERE updated_at < created_at;
UPDATE capacity_reservationhistory SET updated_at = created_at WHERE updated_at < created_at;
"""
UNDO = """
DROP TRIGGER IF EXISTS capacity_reservation_changed_after_created ON capacity_reservation;
DROP FUNCTION IF EXISTS capacity_reservation_changed_after_created();
"""


class Migration(migrations.Migration):
    dependencies = [
        ("capacity", "0020_whatif_run"),
    ]

    operations = [migrations.RunSQL(SQL, UNDO)]
