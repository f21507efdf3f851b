"""Real-time endpoints: deploy a registered version under a name (with an entry script, or as the
ONNX image classifier), switch it to another version or script, regenerate its keys; and what its
page shows (status, figures of the serving processes).

The serving processes (designer/serving) read Endpoint rows (polling `revision`) and write
their heartbeat (ServingReplica), their counts (EndpointStats) and the requests they refused
(EndpointError); this file only reads those. Names are global: they are in the scoring URL.
"""
from __future__ import annotations

import re
import secrets
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from designer.engine import latency
from designer.engine import statuses as st
from designer.pipelines.endpoints import entry_scripts
from designer.pipelines.models import Endpoint, EndpointError, EndpointStats, ModelVersion, ServingReplica
from designer.pipelines.registry.service import RegistryError, get_version
from sdk.formats import custom_model

NAME_RULE = "3 to 32 lowercase letters, digits or '-', starting with a letter and not ending with '-'"
NAME_PATTERN = re.compile(r"^[a-z][a-z0-9-]{1,30}[a-z0-9]$")  # NAME_RULE in words
REPLICA_SILENT_AFTER = timedelta(seconds=15)  # a serving process not heard of for longer is gone
RECENT_ERRORS = 20
KEYS = ("primary", "secondary")


def new_key() -> str:
    return secrets.token_urlsafe(32)


def default_name(model_name: str) -> str:
    """The model's name made a free endpoint name: `Digits_v2` -> `digits-v2`, then `-2`, `-3`..."""
    base = re.sub(r"[^a-z0-9]+", "-", model_name.lower()).strip("-")
    base = base if base[:1].isalpha() else f"model-{base}"
    if len(base) > 28:  # cut at a word, not in one: digits-resnet-18-from-scratch -> digits-resnet-18-from
        base = base[:29].rsplit("-", 1)[0] if "-" in base[3:29] else base[:28]
    base = base.rstrip("-")
    base = base if len(base) >= 3 else f"{base}-ep"
    name, n = base, 1
    while Endpoint.objects.filter(name=name).exists():
        n += 1
        name = f"{base}-{n}"
    return name


def create(owner, model_name: str, number, name: str | None = None, entry_script=None, script_name=None) -> Endpoint:
    """`entry_script` (Python source; `script_name` its file name): the original's init() / run(raw_data)
    contract answers the requests; None: the version's ONNX image classifier does."""
    script, script_name = entry_scripts.check(owner, entry_script, script_name) if entry_script is not None else ("", "")
    version = _servable(get_version(owner, model_name, number), script)
    name = name or default_name(model_name)
    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
        raise RegistryError(f"endpoint name {str(name)[:80]!r} is not usable: a name is {NAME_RULE}")
    try:
        with transaction.atomic():
            _lock(version)
            return Endpoint.objects.create(owner=owner, name=name, version=version, primary_key=new_key(),
                                           secondary_key=new_key(), entry_script=script, entry_script_name=script_name)
    except IntegrityError:
        raise RegistryError(f"the endpoint name {name!r} is taken: choose another", status=409)


def _servable(version: ModelVersion, script: str = "") -> ModelVersion:
    if script:  # the script loads the folder as it is: a failed packaging leaves the model there
        return version
    if version.status == st.FAILED:
        raise RegistryError(f"{version} cannot be served: {version.error}")
    if version.format not in (custom_model.DESIGNER, custom_model.MLFLOW) and not version.has_onnx:
        raise RegistryError(f"version {version.version} of {version.model.name} is a model folder of its own "
                            f"({version.format}), not an ONNX image classifier: deploy it with an entry script "
                            "(entry_script: a Python script with init() and run(raw_data))")
    return version


def switch(endpoint: Endpoint, number=None, entry_script=None, script_name=None) -> Endpoint:
    """Serve another version of the same model, or another entry script; the serving processes
    swap it in when it is loaded, while requests already under way finish on the old one (no
    request fails). `entry_script` "" goes back to the ONNX image classifier."""
    script, name = endpoint.entry_script, endpoint.entry_script_name
    if entry_script is not None:
        script, name = entry_scripts.check(endpoint.owner, entry_script, script_name) if entry_script != "" else ("", "")
    number = endpoint.version.version if number is None else number
    version = _servable(get_version(endpoint.owner, endpoint.version.model.name, number), script)
    with transaction.atomic():
        _lock(version)
        Endpoint.objects.filter(pk=endpoint.pk).update(version=version, entry_script=script, entry_script_name=name,
                                                       revision=F("revision") + 1, updated_at=timezone.now())
    endpoint.refresh_from_db()
    return endpoint


def _lock(version: ModelVersion) -> None:
    """Hold the version's row until the endpoint names it: a delete of it waits (or was first:
    then it is gone, and said so)."""
    if not ModelVersion.objects.select_for_update().filter(pk=version.pk).exists():
        raise RegistryError(f"{version} was just deleted", status=404)


def regenerate(endpoint: Endpoint, which) -> Endpoint:
    if which not in KEYS:
        raise RegistryError(f"key must be one of {', '.join(KEYS)}, not {which!r}")
    Endpoint.objects.filter(pk=endpoint.pk).update(**{f"{which}_key": new_key()}, revision=F("revision") + 1,
                                                   updated_at=timezone.now())
    endpoint.refresh_from_db()
    return endpoint


# --------------------------------------------------------------------------- what the page shows


def scoring_url_for(name: str) -> str:
    return f"{settings.SERVING_URL.rstrip('/')}/api/endpoints/{name}/score"


def scoring_url(endpoint: Endpoint) -> str:
    return scoring_url_for(endpoint.name)


def curl(endpoint: Endpoint) -> str:
    mlflow = not endpoint.entry_script and endpoint.version.format == custom_model.MLFLOW
    if mlflow:  # designer/serving/mlflow_score.py reads Azure ML's input_data
        body = "  -H 'Content-Type: application/json' -d '{\"input_data\": [[0.1, 0.2]]}'"
    elif endpoint.entry_script:
        body = "  -H 'Content-Type: application/json' -d '{\"data\": [[0.1, 0.2]]}'"
    else:
        body = "  -F 'image=@image.png'"
    note = "# input_data: a placeholder; send one row per input, shaped as the model's input\n" if mlflow else ""
    return note + f"curl -X POST '{scoring_url(endpoint)}' \\\n  -H 'Authorization: Bearer {endpoint.primary_key}' \\\n" + body


def status(endpoint: Endpoint) -> tuple[str, str]:
    """(status, a sentence saying why) from its version and the serving processes' heartbeats."""
    version = endpoint.version
    # an entry script loads the folder as it is, packaged or not
    if version.status == st.PREPARING and not endpoint.entry_script:
        return st.WAITING, f"waiting for version {version.version} to be packaged for serving (ONNX export on a worker)"
    if version.status == st.FAILED and not endpoint.entry_script:
        return st.FAILED, f"version {version.version} could not be packaged: {version.error}"
    replicas = list(ServingReplica.objects.filter(last_seen__gte=timezone.now() - REPLICA_SILENT_AFTER))
    if not replicas:
        return st.UNAVAILABLE, ("no serving process has been heard of lately: `make run` starts one; "
                                "in production, `python -m designer.serving` (docs/how-to/registry-and-endpoints.md)")
    loaded = [r.loaded.get(endpoint.name) or {} for r in replicas]
    errors = [f"{r.name}: {info['error']}" for r, info in zip(replicas, loaded) if info.get("error")]
    current = sum(1 for info in loaded if info.get("version") == version.id and not info.get("error"))
    serving = sum(1 for info in loaded if info.get("version") and not info.get("error"))
    if current == len(replicas):
        return st.HEALTHY, f"serving version {version.version} on {_processes(current)}"
    if serving:
        others = {info["version"] for info in loaded if info.get("version") not in (None, version.id) and not info.get("error")}
        old = ", ".join(str(n) for n in sorted(ModelVersion.objects.filter(pk__in=others).values_list("version", flat=True)))
        return st.HEALTHY, (f"switching to version {version.version}: loaded by {current} of {_processes(len(replicas))}"
                            + (f"; meanwhile version {old} answers" if old else ""))
    if errors:
        return st.FAILED, "cannot load the model: " + "; ".join(errors[:3])
    return st.WAITING, f"a serving process is loading version {version.version}"


def _processes(n: int) -> str:
    return f"{n} serving process{'es' if n != 1 else ''}"


def figures(endpoint: Endpoint) -> dict:
    rows = list(EndpointStats.objects.filter(endpoint=endpoint))
    histogram = latency.merge([r.latency for r in rows])
    return {"requests": sum(r.requests for r in rows), "errors": sum(r.errors for r in rows),
            "p50_ms": _rounded(latency.percentile(histogram, 0.50)), "p95_ms": _rounded(latency.percentile(histogram, 0.95))}


def endpoint_json(endpoint: Endpoint) -> dict:
    state, message = status(endpoint)
    model = endpoint.version.model
    recent = EndpointError.objects.filter(endpoint=endpoint)[:RECENT_ERRORS]
    return {
        "name": endpoint.name, "model": model.name, "version": endpoint.version.version, "status": state,
        "status_message": message, "scoring_url": scoring_url(endpoint), "curl": curl(endpoint),
        "keys": {"primary": endpoint.primary_key, "secondary": endpoint.secondary_key},
        "entry_script": endpoint.entry_script_name or None, "format": endpoint.version.format,
        "stats": figures(endpoint),
        "recent_errors": [{"at": e.at.isoformat(), "status": e.status, "message": e.message} for e in recent],
        "versions": list(model.versions.exclude(status=st.FAILED).order_by("version").values_list("version", flat=True)),
        "created_at": endpoint.created_at.isoformat(), "updated_at": endpoint.updated_at.isoformat(),
        "url": f"/endpoints/{endpoint.name}/", "api_url": f"/api/endpoints/{endpoint.name}",
    }


def _rounded(ms: float | None) -> float | None:
    return None if ms is None else round(ms, 2)
