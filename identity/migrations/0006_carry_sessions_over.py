"""Carry the live sessions of Django's own table over, with their user's id: nobody is signed out."""

from django.contrib.auth import SESSION_KEY
from django.contrib.sessions.backends.db import SessionStore
from django.db import migrations
from django.utils import timezone


def carry_over(apps, schema_editor):
    old = apps.get_model("sessions", "Session")
    new = apps.get_model("identity", "Session")
    users = set(apps.get_model("auth", "User").objects.values_list("pk", flat=True))
    decode = SessionStore().decode  # an undecodable row (another secret key) decodes to {}
    rows = []
    for session in old.objects.using(schema_editor.connection.alias).filter(expire_date__gt=timezone.now()):
        try:
            user_id = int(decode(session.session_data).get(SESSION_KEY))
        except (TypeError, ValueError):
            user_id = None
        rows.append(
            new(
                session_key=session.session_key,
                session_data=session.session_data,
                expire_date=session.expire_date,
                user_id=user_id if user_id in users else None,
            )
        )
    new.objects.using(schema_editor.connection.alias).bulk_create(rows, batch_size=1000, ignore_conflicts=True)


class Migration(migrations.Migration):
    dependencies = [
        ("identity", "0005_session_with_user"),
        ("sessions", "0001_initial"),
    ]

    operations = [migrations.RunPython(carry_over, migrations.RunPython.noop)]
