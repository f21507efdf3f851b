from django.apps import AppConfig
from django.core import checks

import designer.celery  # noqa: F401 - binds shared tasks to our Celery app
from designer.pipelines.catalogue import get_catalogue


class PipelinesConfig(AppConfig):
    name = "designer.pipelines"
    label = "pipelines"
    verbose_name = "Pipelines"

    def ready(self):
        checks.register(check_module_catalogue)
        from designer.pipelines import signals, sweeps  # the app registry is ready only now

        signals.run_finished.connect(sweeps.on_run_finished, dispatch_uid="sweeps.on_run_finished")


def check_module_catalogue(app_configs=None, **kwargs):
    """A module file that cannot be loaded (a kind declared twice, an import error) stops
    `migrate`, `runserver` and the other commands at start-up, not at the first page."""
    try:
        get_catalogue()
    except Exception as e:  # any failure to load a module file is reported as is
        return [checks.Error(f"the module catalogue cannot be loaded: {type(e).__name__}: {e}",
                             hint="fix the file named, or DESIGNER_EXTRA_MODULES", id="pipelines.E001")]
    return []
