"""A node's attempts: a node whose worker was lost goes back to the queue up to its Max retries."""
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("pipelines", "0022_dataset_versions")]

    operations = [
        migrations.AddField("noderun", "attempt", models.PositiveSmallIntegerField(default=1)),
        migrations.AddField("noderun", "attempts", models.JSONField(
            blank=True, default=list,
            help_text="the earlier attempts: [{attempt, worker, started_at, lost_at, reason, retried_at}]")),
    ]
