"""Stored drafts move to the pipeline file's schema_version 2 (pipeline parameters): a draft of
version 1 would otherwise show none of its problems until it is next saved."""
from django.db import migrations

from designer.engine.schema_migrations import CURRENT, SchemaVersionError, migrate


def forwards(apps, schema_editor):
    Pipeline = apps.get_model("pipelines", "Pipeline")
    for p in Pipeline.objects.only("id", "draft").iterator():
        draft = p.draft
        if not isinstance(draft, dict) or draft.get("schema_version") == CURRENT:
            continue
        try:
            p.draft = migrate(draft)
        except SchemaVersionError:
            continue  # not a document this version reads: left as it is, its problems say why
        p.save(update_fields=["draft"])


class Migration(migrations.Migration):
    dependencies = [("pipelines", "0006_sweeps")]
    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
