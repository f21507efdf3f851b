from django.apps import AppConfig
from django.core import checks
from django.db.models.signals import post_delete

import designer.celery  # noqa: F401 - binds shared tasks to our Celery app


class PipelinesConfig(AppConfig):
    name = "designer.pipelines"
    label = "pipelines"
    verbose_name = "Pipelines"

    def ready(self):
        # the app registry is ready only now: the catalogue reads the users' components
        from designer.pipelines.catalogue import service as catalogue
        from designer.pipelines.models import Sweep
        from designer.pipelines.runs import execute, signals
        from designer.pipelines.sweeps import policy
        from designer.pipelines.sweeps import service as sweeps

        checks.register(catalogue.check_module_catalogue)
        execute.watch_nodes_with(policy.Watch)  # a sweep's trial is judged by its policy while its nodes run
        signals.run_finished.connect(sweeps.on_run_finished, dispatch_uid="sweeps.on_run_finished")
        post_delete.connect(sweeps.on_sweep_deleted, sender=Sweep, dispatch_uid="sweeps.on_sweep_deleted")
