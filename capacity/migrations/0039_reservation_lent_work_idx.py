"""Spot work on lent GPUs found by index (an owner's page and every reclaim scanned a year of rows)."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('capacity', '0038_booked_points'),
        ('inventory', '0017_history_request_id'),
    ]

    operations = [
        migrations.AddIndex(
            model_name='reservation',
            index=models.Index(condition=models.Q(('priority', 'spot'), ('status', 'placed'), models.Q(('lent_from', []), _negated=True)), fields=['id'], name='reservation_lent_work_idx'),
        ),
    ]
