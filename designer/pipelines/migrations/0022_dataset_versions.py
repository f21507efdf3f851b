"""Data assets: a dataset name has versions (each upload of a name is its next version; every
dataset kept so far is version 1 of its name, names being unique until now), what each archive
holds (filled at upload; {} for those kept before), the highest version each name was given (a
deleted version's number is never given again), and which version each run read. Runs made
before it are read once: a Dataset node whose `dataset` is one of the owner's kept datasets
records that use, so that their lineage shows and the version is kept while they are."""
import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


def name_versions(apps, schema_editor):
    Dataset, DatasetName = apps.get_model("pipelines", "Dataset"), apps.get_model("pipelines", "DatasetName")
    DatasetName.objects.bulk_create(DatasetName(owner_id=owner, name=name, last_version=1)
                                    for owner, name in Dataset.objects.values_list("owner_id", "name").distinct())


def record_uses(apps, schema_editor):
    Run, Dataset, DatasetUse = (apps.get_model("pipelines", m) for m in ("Run", "Dataset", "DatasetUse"))
    owned = {}
    for pk, owner in Dataset.objects.values_list("pk", "owner_id"):
        owned[pk] = owner
    if not owned:
        return
    batch = []
    for run_id, owner, snapshot in Run.objects.values_list("pk", "owner_id", "snapshot").iterator(chunk_size=500):
        nodes = snapshot.get("nodes") if isinstance(snapshot, dict) else None
        seen = set()
        for n in nodes if isinstance(nodes, list) else []:
            params = n.get("parameters") if isinstance(n, dict) and n.get("kind") == "dataset" else None
            ds = params.get("dataset") if isinstance(params, dict) else None
            node_id = str(n.get("id"))[:64] if isinstance(n, dict) else ""
            if isinstance(ds, int) and not isinstance(ds, bool) and owned.get(ds) == owner and node_id not in seen:
                seen.add(node_id)
                batch.append(DatasetUse(run_id=run_id, dataset_id=ds, node_id=node_id))
        if len(batch) >= 1000:
            DatasetUse.objects.bulk_create(batch)
            batch = []
    DatasetUse.objects.bulk_create(batch)


class Migration(migrations.Migration):

    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
        ("pipelines", "0021_jobs"),
    ]

    operations = [
        migrations.RemoveConstraint(model_name="dataset", name="one_dataset_name_per_owner"),
        migrations.AddField(model_name="dataset", name="version",
                            field=models.PositiveIntegerField(default=1, help_text="1, 2, 3... per name")),
        migrations.AddField(model_name="dataset", name="contents", field=models.JSONField(blank=True, default=dict)),
        migrations.AddConstraint(model_name="dataset", constraint=models.UniqueConstraint(
            fields=("owner", "name", "version"), name="one_dataset_version_per_name")),
        migrations.CreateModel(
            name="DatasetUse",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("node_id", models.CharField(max_length=64)),
                ("dataset", models.ForeignKey(on_delete=django.db.models.deletion.RESTRICT, related_name="uses",
                                              to="pipelines.dataset")),
                ("run", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="dataset_uses",
                                          to="pipelines.run")),
            ],
            options={"ordering": ["-run_id", "node_id"]},
        ),
        migrations.AddConstraint(model_name="datasetuse", constraint=models.UniqueConstraint(
            fields=("run", "node_id"), name="one_dataset_use_per_node")),
        migrations.CreateModel(
            name="DatasetName",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("name", models.CharField(max_length=200)),
                ("last_version", models.PositiveIntegerField(default=0)),
                ("owner", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="dataset_names",
                                            to=settings.AUTH_USER_MODEL)),
            ],
        ),
        migrations.AddConstraint(model_name="datasetname", constraint=models.UniqueConstraint(
            fields=("owner", "name"), name="one_version_count_per_dataset_name")),
        migrations.RunPython(name_versions, migrations.RunPython.noop),
        migrations.RunPython(record_uses, migrations.RunPython.noop),
    ]
