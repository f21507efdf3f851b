"""One dataset name per owner. Datasets stored before uploads were refused by name may share one:
the later ones are renamed 'digits 2', 'digits 3'... (as the page offers for a new upload) first."""
from django.db import migrations, models


def rename_duplicates(apps, schema_editor):
    Dataset = apps.get_model("pipelines", "Dataset")
    taken: dict[int, set[str]] = {}
    for ds in Dataset.objects.order_by("owner_id", "id").only("id", "owner_id", "name"):
        names = taken.setdefault(ds.owner_id, set())
        if ds.name not in names:
            names.add(ds.name)
            continue
        n = 2
        while f"{ds.name} {n}"[:200] in names or Dataset.objects.filter(owner_id=ds.owner_id, name=f"{ds.name} {n}"[:200]).exists():
            n += 1
        ds.name = f"{ds.name} {n}"[:200]
        names.add(ds.name)
        ds.save(update_fields=["name"])


class Migration(migrations.Migration):

    dependencies = [
        ("pipelines", "0010_api_tokens"),
    ]

    operations = [
        migrations.RunPython(rename_duplicates, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name="dataset",
            constraint=models.UniqueConstraint(fields=("owner", "name"), name="one_dataset_name_per_owner"),
        ),
    ]
