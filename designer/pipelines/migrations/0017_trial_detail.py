from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('pipelines', '0016_worker_compute_target'),
    ]

    operations = [
        migrations.AddField(
            model_name='trial',
            name='detail',
            field=models.TextField(blank=True, help_text='how it ended, in words: an early terminated trial says whether its script stopped when asked or was ended after the grace'),
        ),
    ]
