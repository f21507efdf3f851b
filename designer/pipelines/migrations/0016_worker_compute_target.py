"""Workers join a compute target, and say which GPUs their machine has and whether CUDA starts."""
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("pipelines", "0015_trial_kept_step")]
    operations = [
        migrations.AddField(
            model_name="worker", name="compute_target",
            field=models.CharField(blank=True, db_index=True, default="", max_length=64,
                                   help_text="the compute target it joined (WORKER_COMPUTE_TARGET); nodes of that target run here")),
        migrations.AddField(
            model_name="worker", name="gpu_inventory",
            field=models.JSONField(blank=True, default=list,
                                   help_text="the GPUs nvidia-smi lists on its machine: [{index, name, memory_mb}]")),
        migrations.AddField(
            model_name="worker", name="cuda_problem",
            field=models.TextField(blank=True, default="",
                                   help_text="why CUDA could not start although nvidia-smi lists GPUs: it then offers 0 GPUs")),
    ]
