"""Identity takes over TokenLifetime from capacity (capacity 0046): state only, on the table it always
had (capacity_tokenlifetime), with its rows. Its content type follows, so its permissions do too.
Reversing it changes no table and gives the content type back."""

import django.db.models.deletion
from django.db import migrations, models


def move_content_type(apps, schema_editor, source="capacity", target="identity"):
    """Rename the model's content type's app; a fresh database has none yet (post_migrate makes it)."""
    content_type = apps.get_model("contenttypes", "ContentType")
    rows = content_type.objects.using(schema_editor.connection.alias)
    if rows.filter(app_label=target, model="tokenlifetime").exists():
        # Made by a post_migrate run in between: the old row's permissions are the ones in use.
        rows.filter(app_label=target, model="tokenlifetime").delete()
    rows.filter(app_label=source, model="tokenlifetime").update(app_label=target)


def give_content_type_back(apps, schema_editor):
    move_content_type(apps, schema_editor, source="identity", target="capacity")


class Migration(migrations.Migration):
    dependencies = [
        ("authtoken", "0004_alter_tokenproxy_options"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("identity", "0006_carry_sessions_over"),
        ("capacity", "0046_move_token_models"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.CreateModel(
                    name="TokenLifetime",
                    fields=[
                        (
                            "token",
                            models.OneToOneField(
                                on_delete=django.db.models.deletion.CASCADE,
                                primary_key=True,
                                related_name="lifetime",
                                serialize=False,
                                to="authtoken.token",
                            ),
                        ),
                        (
                            "expires_at",
                            models.DateTimeField(
                                blank=True, help_text="Empty: issued + TOKEN_DAYS.", null=True
                            ),
                        ),
                        ("revoked_at", models.DateTimeField(blank=True, null=True)),
                        (
                            "revoked_by",
                            models.CharField(
                                blank=True, help_text="Who revoked it, and how.", max_length=150
                            ),
                        ),
                    ],
                    options={"db_table": "capacity_tokenlifetime"},
                ),
            ],
        ),
        migrations.RunPython(move_content_type, give_content_type_back),
    ]
