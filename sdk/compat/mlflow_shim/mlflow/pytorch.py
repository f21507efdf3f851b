"""`mlflow.pytorch` as a script calls it (sdk/compat): save_model() and log_model() write an MLflow
model folder in MLflow's own layout (its pytorch flavour), which MLflow itself loads:

    <folder>/MLmodel                   flavors: python_function (loader_module mlflow.pytorch) and pytorch
    <folder>/data/model.pth            torch.save(model, pickle_module=cloudpickle): a class of the
                                       script's own (__main__) is kept by value, as MLflow's does
    <folder>/data/pickle_module_info.txt   mlflow.pytorch.pickle_module (MLflow's name for cloudpickle)
    <folder>/requirements.txt, conda.yaml, python_env.yaml   what loading it needs (torch, cloudpickle, mlflow)
    <folder>/code/                     the code_paths given, if any

log_model(model, "model") keeps the model as an output of the node: the component's output declared
`type: mlflow_model` (the one named like the artifact path, else the first), or where it declared
none, an output made for the node, `mlflow_model` (DESIGNER_MLFLOW_MODELS says where: sdk/compat).
Only rank 0 of a distributed job writes it. load_model() reads such a folder back (a path, a
file:// URI, or runs:/<id>/<artifact path> of a model this process logged). autolog() does
nothing but say so.
"""
from __future__ import annotations

import json
import os
import platform
import shutil
import sys
import tempfile
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import yaml

from sdk import compat
from sdk.compat.recording import note

from . import __version__
from . import _run as _current_run
from . import autolog as _autolog
from .exceptions import MlflowException

FLAVOR_NAME = "pytorch"
MLMODEL = "MLmodel"
DATA = "data"
WEIGHTS = "model.pth"
PICKLE_INFO = "pickle_module_info.txt"
PICKLE_MODULE = "mlflow.pytorch.pickle_module"  # what MLflow writes; cloudpickle is what it names
CODE = "code"
CONDA, PYTHON_ENV, REQUIREMENTS = "conda.yaml", "python_env.yaml", "requirements.txt"

_logged: dict[str, Path] = {}  # artifact path -> folder, of the models this process logged (runs:/ URIs)


@dataclass
class ModelInfo:
    """What log_model() returns (as MLflow's mlflow.models.model.ModelInfo)."""

    artifact_path: str
    model_uri: str
    run_id: str
    flavors: dict = field(default_factory=dict)
    model_uuid: str = ""
    utc_time_created: str = ""
    mlflow_version: str = __version__
    local_path: str = ""  # where the designer keeps it: the output's folder


def autolog(*args, **kwargs) -> None:
    _autolog(*args, **kwargs)


def get_default_pip_requirements() -> list[str]:
    import cloudpickle
    import torch
    return [f"torch=={_public(torch.__version__)}", f"cloudpickle=={cloudpickle.__version__}"]


def save_model(pytorch_model, path, conda_env=None, mlflow_model=None, code_paths=None, pickle_module=None,
               signature=None, input_example=None, extra_files=None, pip_requirements=None, extra_pip_requirements=None,
               metadata=None, **kwargs) -> None:
    """Write `pytorch_model` as an MLflow model folder at `path` (which must not hold files yet)."""
    import torch

    if not isinstance(pytorch_model, torch.nn.Module):
        raise TypeError("Argument 'pytorch_model' should be a torch.nn.Module")
    folder = Path(path).absolute()
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise MlflowException(f"Path '{folder}' already exists and is not empty")
    _write(pytorch_model, folder, conda_env=conda_env, code_paths=code_paths, pickle_module=pickle_module,
           extra_files=extra_files, pip_requirements=pip_requirements, extra_pip_requirements=extra_pip_requirements,
           metadata=metadata, artifact_path=None, torch_kwargs=kwargs)


def log_model(pytorch_model, artifact_path: str | None = None, conda_env=None, code_paths=None, pickle_module=None,
              registered_model_name=None, signature=None, input_example=None, await_registration_for=None,
              extra_files=None, pip_requirements=None, extra_pip_requirements=None, metadata=None, name=None,
              **kwargs) -> ModelInfo | None:
    """Keep `pytorch_model` as an MLflow model: in the designer, an output of the node (see the module's
    docstring); outside it, under ./mlruns as MLflow's local store would."""
    import torch

    if not isinstance(pytorch_model, torch.nn.Module):
        raise TypeError("Argument 'pytorch_model' should be a torch.nn.Module")
    artifact_path = str(artifact_path or name or "model")
    run = _current_run()
    if os.environ.get("RANK", "0") != "0":
        return None  # rank 0 keeps it; the others' calls do nothing (as for metrics)
    folder, port = _target(artifact_path, run.info.run_id)
    with tempfile.TemporaryDirectory(prefix="mlflow-model-", dir=folder.parent) as scratch:
        staged = Path(scratch) / "model"
        _write(pytorch_model, staged, conda_env=conda_env, code_paths=code_paths, pickle_module=pickle_module,
               extra_files=extra_files, pip_requirements=pip_requirements, extra_pip_requirements=extra_pip_requirements,
               metadata=metadata, artifact_path=artifact_path, torch_kwargs=kwargs)
        replaced = folder.is_dir() and any(folder.iterdir())
        shutil.rmtree(folder, ignore_errors=True)
        staged.rename(folder)  # complete, or not there at all
    _logged[_normal(artifact_path)] = folder
    where = f"output '{port}' of the node" if port else str(folder)
    note(f"(mlflow) mlflow.pytorch.log_model({artifact_path!r}): an MLflow model, kept as {where}"
         + (" (it replaces the model logged there before)" if replaced else "")
         + ("; register it from Outputs + logs (Register model)" if port else ""))
    if registered_model_name:
        note(f"(mlflow) registered_model_name={registered_model_name!r}: not registered by the script; register the "
             f"node's output from the run (Register model), under that name or another")
    info = yaml.safe_load((folder / MLMODEL).read_text(encoding="utf-8"))
    return ModelInfo(artifact_path=artifact_path, model_uri=f"runs:/{run.info.run_id}/{artifact_path}",
                     run_id=run.info.run_id, flavors=info["flavors"], model_uuid=info["model_uuid"],
                     utc_time_created=info["utc_time_created"], local_path=str(folder))


def load_model(model_uri, dst_path=None, **kwargs):
    """The torch model of an MLflow model folder (saved by this module or by MLflow's own)."""
    import torch

    folder = local_folder(model_uri)
    flavor = _flavor(folder, FLAVOR_NAME)
    code = flavor.get("code")
    if code and str(folder / code) not in sys.path:
        sys.path.insert(0, str(folder / code))
    data = folder / flavor.get("model_data", DATA)
    if data.is_dir():
        info = data / PICKLE_INFO
        name = info.read_text(encoding="utf-8").strip() if info.is_file() else "pickle"
        weights = data / WEIGHTS
        if not weights.is_file():
            raise MlflowException(f"{model_uri}: no {DATA}/{WEIGHTS} in the MLflow model folder {folder}")
        return torch.load(weights, weights_only=False, pickle_module=_pickle_module(name), **kwargs)
    return torch.load(data, weights_only=False, **kwargs)  # a model saved by an old MLflow: the file itself


def local_folder(model_uri) -> Path:
    """The folder of a model URI: a path, file://..., or runs:/<run id>/<artifact path> logged here."""
    text = str(model_uri)
    if text.startswith("runs:/"):
        parts = text[len("runs:/"):].split("/", 1)
        logged = _logged.get(_normal(parts[1] if len(parts) > 1 else ""))
        if logged is None:
            raise MlflowException(f"{text}: no model was logged at that path by this process (the designer keeps a "
                                  f"logged model as an output of the node: read it from that folder)")
        return logged
    if text.startswith("file://"):
        text = text[len("file://"):]
    folder = Path(text).absolute()
    if not (folder / MLMODEL).is_file():
        raise MlflowException(f"{model_uri}: not an MLflow model folder (no {MLMODEL} file in {folder})")
    return folder


# ------------------------------------------------------------------------ the folder


def _write(model, folder: Path, *, conda_env, code_paths, pickle_module, extra_files, pip_requirements,
           extra_pip_requirements, metadata, artifact_path, torch_kwargs) -> None:
    import cloudpickle
    import torch

    pickle_module = pickle_module or cloudpickle
    pickle_name = PICKLE_MODULE if pickle_module is cloudpickle else pickle_module.__name__
    (folder / DATA).mkdir(parents=True, exist_ok=True)
    (folder / DATA / PICKLE_INFO).write_text(pickle_name, encoding="utf-8")
    if isinstance(model, torch.jit.ScriptModule):
        torch.jit.save(model, str(folder / DATA / WEIGHTS))
    else:
        torch.save(model, folder / DATA / WEIGHTS, pickle_module=pickle_module, **torch_kwargs)
    code = _copy_code(code_paths, folder)
    flavor: dict = {"code": code, "model_data": DATA, "pytorch_version": str(torch.__version__)}
    if extra_files:
        flavor["extra_files"] = _copy_extra_files(extra_files, folder)
    pyfunc = {"code": code, "data": DATA, "env": {"conda": CONDA, "virtualenv": PYTHON_ENV},
              "loader_module": "mlflow.pytorch", "pickle_module_name": pickle_name,
              "python_version": platform.python_version()}
    mlmodel = {**({"artifact_path": artifact_path} if artifact_path else {}),
               "flavors": {"python_function": pyfunc, FLAVOR_NAME: flavor},
               "mlflow_version": __version__, "model_size_bytes": _size(folder), "model_uuid": uuid.uuid4().hex,
               "utc_time_created": datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S.%f"),
               **({"metadata": metadata} if metadata else {})}
    (folder / MLMODEL).write_text(yaml.safe_dump(mlmodel, default_flow_style=False), encoding="utf-8")
    requirements = _requirements(conda_env, pip_requirements, extra_pip_requirements)
    (folder / REQUIREMENTS).write_text("\n".join(requirements) + "\n", encoding="utf-8")
    conda = conda_env if isinstance(conda_env, dict) else {
        "channels": ["conda-forge"], "name": "mlflow-env",
        "dependencies": [f"python={platform.python_version()}", "pip", {"pip": requirements}]}
    if isinstance(conda_env, (str, os.PathLike)):
        shutil.copyfile(conda_env, folder / CONDA)
    else:
        (folder / CONDA).write_text(yaml.safe_dump(conda, default_flow_style=False), encoding="utf-8")
    (folder / PYTHON_ENV).write_text(yaml.safe_dump({
        "python": platform.python_version(), "build_dependencies": ["pip", "setuptools", "wheel"],
        "dependencies": [f"-r {REQUIREMENTS}"]}, default_flow_style=False, sort_keys=False), encoding="utf-8")


def _requirements(conda_env, pip_requirements, extra_pip_requirements) -> list[str]:
    """requirements.txt: what loading the model needs (MLflow's defaults for its pytorch flavour),
    or the pip list given (pip_requirements, or the pip entry of conda_env), then the extra."""
    if pip_requirements is not None:
        given = _lines(pip_requirements)
    elif conda_env is not None:
        env = conda_env if isinstance(conda_env, dict) else yaml.safe_load(Path(conda_env).read_text(encoding="utf-8"))
        given = [str(r) for d in (env or {}).get("dependencies", []) if isinstance(d, dict) for r in d.get("pip", [])]
    else:
        given = ["mlflow", *get_default_pip_requirements()]
    return [*given, *_lines(extra_pip_requirements or [])]


def _lines(requirements) -> list[str]:
    if isinstance(requirements, (str, os.PathLike)):  # a requirements file
        return [line.strip() for line in Path(requirements).read_text(encoding="utf-8").splitlines()
                if line.strip() and not line.strip().startswith("#")]
    return [str(r) for r in requirements]


def _copy_code(code_paths, folder: Path) -> str | None:
    if not code_paths:
        return None
    for item in code_paths:
        source = Path(item)
        target = folder / CODE / source.name
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copyfile(source, target)
    return CODE


def _copy_extra_files(extra_files, folder: Path) -> list[dict]:
    kept = []
    for item in extra_files:
        source = Path(item)
        target = folder / "extra_files" / source.name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        kept.append({"path": f"extra_files/{source.name}"})
    return kept


def _size(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())


def _public(version: str) -> str:
    """2.5.1+cpu -> 2.5.1: pip finds no local version on the package index (MLflow pins the same)."""
    return version.split("+", 1)[0]


def _normal(artifact_path: str) -> str:
    return "/".join(p for p in str(artifact_path).replace("\\", "/").split("/") if p not in ("", "."))


def _target(artifact_path: str, run_id: str) -> tuple[Path, str]:
    """(folder, output port name) where log_model keeps the model: an output of the node in the
    designer; outside it ./mlruns/0/<run id>/artifacts/<artifact path> and no port."""
    raw = os.environ.get(compat.MLFLOW_MODELS_ENV)
    if not raw:
        folder = Path("mlruns", "0", run_id, "artifacts", _normal(artifact_path) or "model").absolute()
        folder.parent.mkdir(parents=True, exist_ok=True)
        return folder, ""
    where = json.loads(raw)
    declared: dict[str, str] = where.get("outputs") or {}
    if declared:
        wanted = _normal(artifact_path).replace("/", "_")
        port = wanted if wanted in declared else next(iter(declared))
        return Path(declared[port]), port
    made = Path(where["made"])
    made.parent.mkdir(parents=True, exist_ok=True)
    return made, made.name


def _flavor(folder: Path, name: str) -> dict:
    try:
        info = yaml.safe_load((folder / MLMODEL).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as e:
        raise MlflowException(f"{folder / MLMODEL}: cannot be read: {e}") from None
    flavors = info.get("flavors") if isinstance(info, dict) else None
    if not isinstance(flavors, dict) or not isinstance(flavors.get(name), dict):
        raise MlflowException(f'Model does not have the "{name}" flavor')
    return flavors[name]


def _pickle_module(name: str):
    """The module torch.load unpickles with: MLflow's mlflow.pytorch.pickle_module is cloudpickle's
    pickler beside the standard unpickler (cloudpickle writes plain pickle)."""
    import importlib
    import pickle
    import types

    if name not in (PICKLE_MODULE, "cloudpickle"):
        return importlib.import_module(name)
    import cloudpickle
    module = types.ModuleType(PICKLE_MODULE)
    module.__dict__.update({k: v for k, v in vars(cloudpickle).items() if not k.startswith("__")})
    module.__dict__.update(Pickler=cloudpickle.CloudPickler, Unpickler=pickle.Unpickler, load=pickle.load,
                           loads=pickle.loads)
    return module
