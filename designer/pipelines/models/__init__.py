"""This app's models, one file per concern (as Zulip's models/ package), all importable from here:
`from designer.pipelines.models import Run, Sweep`. The app label stays `pipelines`, and so do
the tables and the migrations."""
from designer.pipelines.models.components import Component
from designer.pipelines.models.datasets import (  # (named by migration 0002)
    Dataset,
    DatasetName,
    DatasetUse,
    _dataset_storage,
    _dataset_upload_to,
)
from designer.pipelines.models.endpoints import Endpoint, EndpointError, EndpointStats, ServingReplica
from designer.pipelines.models.pipelines import Pipeline
from designer.pipelines.models.registry import ModelVersion, RegisteredModel
from designer.pipelines.models.runs import Event, NodeLaunch, NodeRun, Run, Source, VisibleRuns
from designer.pipelines.models.sweeps import Sweep, Trial
from designer.pipelines.models.tokens import ApiToken
from designer.pipelines.models.workers import Lease, Worker

__all__ = ["ApiToken", "Component", "Dataset", "DatasetName", "DatasetUse", "Endpoint", "EndpointError", "EndpointStats", "Event", "Lease", "ModelVersion",
           "NodeLaunch", "NodeRun", "Pipeline", "RegisteredModel", "Run", "ServingReplica", "Source", "Sweep", "Trial", "VisibleRuns",
           "Worker", "_dataset_storage", "_dataset_upload_to"]
