"""Lending idle GPUs (issue 46, item 3): a booking's layer, and what spot work is lent from.

A device may carry one owner booking (layer 0) and one lent booking (layer 1) at an instant: the
EXCLUDE constraint gains the layer (devicebooking_no_overlap → devicebooking_no_overlap_per_layer).
Existing rows and every insert that names no layer are the owner's (layer 0), so the constraint
judges them exactly as before. History keeps the layer too (capacity/archive.py moves it), so the
usage report tells lent GPU-hours from booked ones after the bookings have moved.
"""

import django.contrib.postgres.constraints
import django.contrib.postgres.fields
from django.db import migrations, models

HISTORY_SQL = """
ALTER TABLE capacity_devicebookinghistory ADD COLUMN layer smallint NOT NULL DEFAULT 0;
CREATE OR REPLACE VIEW capacity_devicebooking_all AS
    SELECT id, device_id, allocation_id, during, layer FROM capacity_devicebooking
    UNION ALL
    SELECT id, device_id, allocation_id, during, layer FROM capacity_devicebookinghistory;
"""

HISTORY_REVERSE = """
DROP VIEW capacity_devicebooking_all;
CREATE VIEW capacity_devicebooking_all AS
    SELECT id, device_id, allocation_id, during FROM capacity_devicebooking
    UNION ALL
    SELECT id, device_id, allocation_id, during FROM capacity_devicebookinghistory;
ALTER TABLE capacity_devicebookinghistory DROP COLUMN layer;
"""


class Migration(migrations.Migration):

    dependencies = [
        ('capacity', '0027_reservation_event_audit_idx'),
        ('inventory', '0015_sample_folds_to_usage'),
    ]

    operations = [
        migrations.AddField(
            model_name='devicebooking',
            name='layer',
            field=models.SmallIntegerField(db_default=0, default=0),
        ),
        migrations.RunSQL(HISTORY_SQL, HISTORY_REVERSE),
        migrations.AddField(
            model_name='anydevicebooking',
            name='layer',
            field=models.SmallIntegerField(default=0),
        ),
        migrations.AddField(
            model_name='reservation',
            name='lent_from',
            field=django.contrib.postgres.fields.ArrayField(base_field=models.BigIntegerField(), blank=True, db_default=[], default=list),
        ),
        migrations.AddConstraint(
            model_name='devicebooking',
            constraint=django.contrib.postgres.constraints.ExclusionConstraint(expressions=[(models.Func(models.F('device_id'), models.F('device_id'), models.Value('[]'), function='int8range'), '&&'), ('during', '&&'), (models.Func(models.F('layer'), models.F('layer'), models.Value('[]'), function='int4range'), '&&')], name='devicebooking_no_overlap_per_layer', violation_error_message='This device is already booked for part of that window.'),
        ),
        migrations.AddConstraint(
            model_name='devicebooking',
            constraint=models.CheckConstraint(condition=models.Q(('layer__in', [0, 1])), name='devicebooking_layer_known', violation_error_message="A booking is the owner's (layer 0) or lent (layer 1)."),
        ),
        migrations.RemoveConstraint(
            model_name='devicebooking',
            name='devicebooking_no_overlap',
        ),
    ]
