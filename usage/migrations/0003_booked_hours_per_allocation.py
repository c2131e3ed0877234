"""The booked-hours trigger splits each allocation's window into days once, not once per device.

A statement's new (or old) bookings are summed first per allocation, model, layer and window: the
sevenths of one allocation's devices share a window, so their pieces of each day add up the same
(capacity migration 0041 made a piece per device and day: a 4-GPU booking over 4 days, 16 pieces
and 16 day splits, now 4). The rows the trigger appends are the same; the function takes about a
fifth less time per placement (issue 60). The full recount (TRUNCATE) is unchanged.
"""

import importlib

from django.db import migrations

C41 = importlib.import_module("capacity.migrations.0041_booking_gpu_model_and_sevenths")


def grouped(rows: str) -> str:
    """Return `rows` summed per allocation, model, layer and window (what a piece is keyed by)."""
    return (
        f"(SELECT allocation_id, gpu_model, layer, during, sum(gpu_sevenths) AS gpu_sevenths FROM {rows}"
        " GROUP BY allocation_id, gpu_model, layer, during)"
    )


def apply(rows) -> str:
    """Return 0041's trigger function with each statement's bookings read through `rows`."""
    new, old = rows("new_rows"), rows("old_rows")
    return f"""
CREATE OR REPLACE FUNCTION capacity_bookedhours_apply() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    {C41.POINTS.appended(C41.pieces(new, 1))};
  ELSIF TG_OP = 'DELETE' THEN
    {C41.POINTS.appended(C41.pieces(old, -1))};
  ELSIF TG_OP = 'UPDATE' THEN
    {C41.POINTS.appended(C41.pieces(new, 1), C41.pieces(old, -1))};
  ELSE
    DELETE FROM capacity_bookedhourschange;
    DELETE FROM capacity_bookedhours;
    DELETE FROM capacity_bookedpointschange;
    DELETE FROM capacity_bookedpoints;
    {C41.RECOUNT};
  END IF;
  RETURN NULL;
END $$;
"""


# 0041's function, as this migration's own text (the reverse): made by the same template.
assert apply(lambda rows: rows).strip() == C41.APPLY.strip()


class Migration(migrations.Migration):
    dependencies = [
        ("usage", "0002_booked_hours_from_capacity"),
        ("capacity", "0048_cheaper_booking_triggers"),
    ]

    operations = [migrations.RunSQL(apply(grouped), C41.APPLY)]
