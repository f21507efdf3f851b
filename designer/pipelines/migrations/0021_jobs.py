"""The Jobs page: a run's and a sweep's experiment, tags and source, a run's final metrics, and the
indexes that list a user's runs a page at a time. Runs and sweeps made before it get the name of
their pipeline as experiment (their own name when the pipeline is gone), source "unknown" ("sweep"
for a sweep's trials) and, for runs that ended, their final metrics from their stored events."""
from django.conf import settings
from django.db import migrations, models

from designer.pipelines.runs.final_metrics import summarise


def _metrics(Event, NodeRun, run_id):
    reused = {(src_run, src_node): node for node, src_run, src_node in
              NodeRun.objects.filter(run_id=run_id, status="reused", reused_from__isnull=False)
              .values_list("node_id", "reused_from__run_id", "reused_from__node_id")}
    logged = []
    for src_run in {r for r, _ in reused}:
        logged += [(i, reused[(src_run, n)], d) for i, n, d in Event.objects.filter(run_id=src_run, type="metric")
                   .order_by("id").values_list("id", "node_id", "data") if (src_run, n) in reused]
    logged.sort(key=lambda x: x[0])
    own = Event.objects.filter(run_id=run_id, type="metric").order_by("id").values_list("node_id", "data")
    return summarise([(n, d) for _, n, d in logged] + list(own))


def forwards(apps, schema_editor):
    Run, Sweep, Trial = apps.get_model("pipelines", "Run"), apps.get_model("pipelines", "Sweep"), apps.get_model("pipelines", "Trial")
    Event, NodeRun = apps.get_model("pipelines", "Event"), apps.get_model("pipelines", "NodeRun")
    for sweep in Sweep.objects.select_related("pipeline").only("id", "name", "pipeline__name").iterator():
        Sweep.objects.filter(pk=sweep.pk).update(experiment=(sweep.pipeline.name if sweep.pipeline else sweep.name)[:200])
    trials = dict(Trial.objects.filter(run__isnull=False).values_list("run_id", "sweep__name"))
    rows = Run.objects.select_related("pipeline").only("id", "name", "status", "pipeline__name").order_by("id")
    for run in rows.iterator(chunk_size=500):
        experiment = run.pipeline.name if run.pipeline else trials.get(run.id, run.name)
        fields = {"experiment": experiment[:200], "source": "sweep" if run.id in trials else "unknown"}
        if run.status in ("completed", "failed", "cancelled"):
            fields["metrics"] = _metrics(Event, NodeRun, run.id)
        Run.objects.filter(pk=run.pk).update(**fields)


class Migration(migrations.Migration):

    dependencies = [
        ('pipelines', '0020_worker_cache'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name='run',
            name='experiment',
            field=models.CharField(blank=True, help_text="a group of runs; the pipeline's name unless given", max_length=200),
        ),
        migrations.AddField(
            model_name='run',
            name='metrics',
            field=models.JSONField(blank=True, default=dict, help_text='its final metrics, stored as it ends: {name: {last, best, node, steps}} (runs/final_metrics.py)'),
        ),
        migrations.AddField(
            model_name='run',
            name='source',
            field=models.CharField(choices=[('page', 'Page'), ('api', 'API'), ('headless', 'Headless'), ('sweep', 'Sweep trial'), ('unknown', 'Unknown')], default='unknown', max_length=16),
        ),
        migrations.AddField(
            model_name='run',
            name='tags',
            field=models.JSONField(blank=True, default=dict, help_text='{key: value}, both strings (runs/labels.py)'),
        ),
        migrations.AddField(
            model_name='sweep',
            name='experiment',
            field=models.CharField(blank=True, help_text="a group of runs; the pipeline's name unless given", max_length=200),
        ),
        migrations.AddField(
            model_name='sweep',
            name='source',
            field=models.CharField(choices=[('page', 'Page'), ('api', 'API'), ('headless', 'Headless'), ('sweep', 'Sweep trial'), ('unknown', 'Unknown')], default='unknown', max_length=16),
        ),
        migrations.AddField(
            model_name='sweep',
            name='tags',
            field=models.JSONField(blank=True, default=dict),
        ),
        migrations.AddIndex(
            model_name='run',
            index=models.Index(fields=['owner', '-submitted_at'], name='run_owner_submitted'),
        ),
        migrations.AddIndex(
            model_name='run',
            index=models.Index(fields=['owner', 'experiment', '-submitted_at'], name='run_owner_experiment'),
        ),
        migrations.AddIndex(
            model_name='run',
            index=models.Index(fields=['owner', 'status', '-submitted_at'], name='run_owner_status'),
        ),
        migrations.AddIndex(
            model_name='run',
            index=models.Index(fields=['owner', 'source', '-submitted_at'], name='run_owner_source'),
        ),
        migrations.AddIndex(
            model_name='sweep',
            index=models.Index(fields=['owner', '-submitted_at'], name='sweep_owner_submitted'),
        ),
        migrations.RunPython(forwards, migrations.RunPython.noop),
    ]
