"""Objects of a user that the API's paths of registry can name, for tests/pipelines/test_openapi.py's fuzzing."""
from __future__ import annotations

import tempfile
from pathlib import Path

from django.conf import settings

from designer.pipelines.endpoints import service as endpoints
from designer.pipelines.models import NodeRun, Run
from designer.pipelines.registry import service as registry
from sdk.formats.meta import write_meta


def objects(user) -> dict[str, dict]:
    """{first path segment after /api/: {path parameter: value}} of objects made here for `user`: a
    registered model with one version and an endpoint serving it. The version is registered by the
    registry from a completed run of a component whose output is an ONNX image classifier (a model
    folder of its own: ready at once, no worker packages it), and deployed without an entry script
    (nothing runs: no serving process is started, the endpoint is only its row)."""
    Path(settings.ARTIFACT_ROOT).mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="openapi-registry-", dir=settings.ARTIFACT_ROOT)) / "fit" / "model"
    folder.mkdir(parents=True)
    (folder / "model.onnx").write_bytes(b"not really a graph")
    (folder / "preprocessing.json").write_text('{"size": 28}')
    write_meta(folder, "OnnxModel")
    run = Run.objects.create(owner=user, name="fuzzed model", status="completed",
                             snapshot={"nodes": [{"id": "fit", "kind": "a_component_of_its_own", "parameters": {}}],
                                       "links": []})
    NodeRun.objects.create(run=run, node_id="fit", kind="a_component_of_its_own", status="completed",
                           outputs={"model": str(folder)})
    version = registry.register(user, run.id, "fit", "fuzzed-model", "a model for the fuzzer", {"by": "test_openapi"})
    endpoint = endpoints.create(user, version.model.name, version.version, "fuzzed-endpoint")
    return {"models": {"name": version.model.name, "version": version.version}, "endpoints": {"name": endpoint.name}}
