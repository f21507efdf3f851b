from django.apps import AppConfig


class PipelinesConfig(AppConfig):
    name = "designer.pipelines"
    label = "pipelines"
    verbose_name = "Pipelines"

    def ready(self):
        import designer.celery  # noqa: F401 - binds shared tasks to our Celery app
