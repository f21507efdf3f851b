"""NodeRun.worker and NodeLaunch.worker point at the Worker row (they held its name as text:
`<machine>:<worker name>` and `<worker name>`); a Worker row is kept when its worker stops.

Existing names are carried over: a name with no Worker row left (its worker shut down, which
deleted the row before) gets one, marked stopped, so that old errors and launches still name it.
A node run inline (`<machine>:inline`) had no worker: it points at none.
"""
import django.db.models.deletion
from django.db import migrations, models
from django.utils import timezone


def _worker_of(Worker, text: str, machine: str = ""):
    name = text.split(":", 1)[-1] if ":" in text else text
    if not name or name == "inline":
        return None
    now = timezone.now()
    worker, _ = Worker.objects.get_or_create(hostname=name, defaults={"machine": machine, "last_seen": now, "stopped_at": now})
    if machine and not worker.machine:
        Worker.objects.filter(pk=worker.pk).update(machine=machine)
    return worker


def names_to_rows(apps, schema_editor):
    Worker = apps.get_model("pipelines", "Worker")
    NodeRun = apps.get_model("pipelines", "NodeRun")
    NodeLaunch = apps.get_model("pipelines", "NodeLaunch")
    for text in NodeRun.objects.exclude(worker_name="").values_list("worker_name", flat=True).distinct():
        machine = text.split(":", 1)[0] if ":" in text else ""
        worker = _worker_of(Worker, text, machine)
        if worker is not None:
            NodeRun.objects.filter(worker_name=text).update(worker=worker)
    for text in NodeLaunch.objects.exclude(worker_name="").values_list("worker_name", flat=True).distinct():
        worker = _worker_of(Worker, text)
        if worker is not None:
            NodeLaunch.objects.filter(worker_name=text).update(worker=worker)


def rows_to_names(apps, schema_editor):
    NodeRun = apps.get_model("pipelines", "NodeRun")
    NodeLaunch = apps.get_model("pipelines", "NodeLaunch")
    for nr in NodeRun.objects.exclude(worker=None).select_related("worker"):
        w = nr.worker
        NodeRun.objects.filter(pk=nr.pk).update(worker_name=f"{w.machine}:{w.hostname}" if w.machine else w.hostname)
    for m in NodeLaunch.objects.exclude(worker=None).select_related("worker"):
        NodeLaunch.objects.filter(pk=m.pk).update(worker_name=m.worker.hostname)


class Migration(migrations.Migration):

    dependencies = [
        ('pipelines', '0004_outbox'),
    ]

    operations = [
        migrations.AddField(
            model_name='worker',
            name='machine',
            field=models.CharField(blank=True, help_text='the host name of the machine it runs on', max_length=200),
        ),
        migrations.AddField(
            model_name='worker',
            name='stopped_at',
            field=models.DateTimeField(blank=True, help_text='when it shut down; NULL while it runs, or if it was lost', null=True),
        ),
        migrations.AlterField(
            model_name='worker',
            name='hostname',
            field=models.CharField(help_text="the Celery worker's name (name@machine)", max_length=200, unique=True),
        ),
        migrations.RenameField(model_name='noderun', old_name='worker', new_name='worker_name'),
        migrations.RenameField(model_name='nodelaunch', old_name='worker', new_name='worker_name'),
        migrations.AlterField(
            model_name='nodelaunch',
            name='worker_name',
            field=models.CharField(blank=True, max_length=200),
        ),
        migrations.AddField(
            model_name='noderun',
            name='worker',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='noderuns', to='pipelines.worker'),
        ),
        migrations.AddField(
            model_name='nodelaunch',
            name='worker',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='launches', to='pipelines.worker'),
        ),
        migrations.RunPython(names_to_rows, rows_to_names),
        migrations.RemoveField(model_name='noderun', name='worker_name'),
        migrations.RemoveField(model_name='nodelaunch', name='worker_name'),
    ]
