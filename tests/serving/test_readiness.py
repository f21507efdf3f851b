"""A replica says it is not ready while a model it will serve is loading, and tries a failed load again."""

from designer.serving import config
from designer.serving.config import Endpoints, Row


class Later:
    """An executor that runs what it is given only when told (a load still under way)."""

    def __init__(self):
        self.waiting = []

    def submit(self, fn, *args):
        self.waiting.append((fn, args))

    def run_all(self):
        waiting, self.waiting = self.waiting, []
        for fn, args in waiting:
            fn(*args)


class Deployment:
    def __init__(self, version_id):
        self.version_id = version_id


def row(version_id=1, revision=1, **kw):
    fields = dict(id=1, name="digits", model="digits", keys=("k",), revision=revision, version_id=version_id,
                  version=version_id, folder="models/1/1/1", status="ready", has_onnx=True, error="")
    return Row(**{**fields, **kw})


def test_not_ready_until_the_first_model_is_loaded_and_ready_during_a_switch():
    loader, loads = Later(), []
    endpoints = Endpoints(lambda r: loads.append(r.version_id) or Deployment(r.version_id), loader)
    assert endpoints.ready()  # nothing to serve: ready
    endpoints.apply({"digits": row()})
    assert not endpoints.ready()  # a request now would get 503: the balancer must send it elsewhere
    loader.run_all()
    assert endpoints.ready() and endpoints.get("digits").deployment.version_id == 1
    endpoints.apply({"digits": row(version_id=2, revision=2)})  # a switch: version 1 answers meanwhile
    assert endpoints.ready() and endpoints.get("digits").deployment.version_id == 1
    loader.run_all()
    assert endpoints.get("digits").deployment.version_id == 2 and loads == [1, 2]


def test_a_version_that_cannot_be_packaged_does_not_hold_readiness():
    endpoints = Endpoints(lambda r: Deployment(r.version_id), Later())
    endpoints.apply({"digits": row(status="failed", error="ONNX export failed")})
    assert endpoints.ready() and "failed to package" in endpoints.get("digits").problem


def test_a_failed_load_is_tried_again_after_a_while(monkeypatch):
    loader, attempts = Later(), []

    def load(r):
        attempts.append(r.version_id)
        if len(attempts) == 1:
            raise OSError("the artifact store did not answer")
        return Deployment(r.version_id)

    clock = [1000.0]
    monkeypatch.setattr(config.time, "monotonic", lambda: clock[0])
    endpoints = Endpoints(load, loader)
    endpoints.apply({"digits": row()})
    loader.run_all()
    served = endpoints.get("digits")
    assert served.failed and "could not be loaded: OSError" in served.problem
    assert endpoints.ready()  # failed: not loading, so it does not hold the others back
    endpoints.apply({"digits": row()})
    assert loader.waiting == []  # not at once
    clock[0] += config.RETRY_LOAD_SECONDS + 1
    endpoints.apply({"digits": row()})
    loader.run_all()
    assert attempts == [1, 1] and endpoints.get("digits").deployment.version_id == 1


