"""What a module declares: port types, ports, parameters, and the Module base class.

Everything the rest of the app knows about a module (palette, parameter form, port type
checking, JSON validation, the catalogue API) is derived from these declarations:

    class ScoreImageModel(Module):
        kind = "score_image_model"          # stored in pipeline JSON: never renamed
        label = "Score Image Model"         # shown in the palette: may change
        category = "Model Scoring & Evaluation"
        inputs = [Port("Trained model", ModelDirectory), Port("Dataset", ImageDirectory)]
        outputs = [Port("Scored dataset", ScoredDataset)]
        params = []

        def run(self, ctx, trained_model, dataset):  # ctx: sdk.context.Context
            ...

Plain Python: imports neither Django nor torch.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any


def slug(label: str) -> str:
    """'Batch size' -> 'batch_size': the stable name stored in pipeline JSON."""
    return re.sub(r"[^a-z0-9]+", "_", label.lower()).strip("_")


# --------------------------------------------------------------------------- machines


@dataclass(frozen=True)
class Machine:
    """A machine that runs modules, as a pre-flight check sees it: its name ("this machine", or a
    worker's Celery name), the folder torch.hub reads pretrained weights from there, and the file
    names in that folder (a worker reports them in its heartbeat)."""
    name: str
    weights_folder: str
    weights: frozenset[str] = frozenset()


# --------------------------------------------------------------------------- port types


@dataclass(frozen=True)
class PortType:
    name: str
    description: str

    def __str__(self) -> str:
        return self.name

    @property
    def words(self) -> str:
        """The type as a sentence names it: "images with a labels index"."""
        return self.description[:1].lower() + self.description[1:]


UntrainedModelDirectory = PortType("UntrainedModelDirectory", "An untrained PyTorch model and its settings")
ModelDirectory = PortType("ModelDirectory", "A trained model with its classes and transforms")
ImageDirectory = PortType("ImageDirectory", "Images with a labels index")
TransformationDirectory = PortType("TransformationDirectory", "An image transformation recipe")
ScoredDataset = PortType("ScoredDataset", "A table of predictions")
EvaluationResults = PortType("EvaluationResults", "Metrics of a scored dataset")
UploadedFile = PortType("UploadedFile", "A file or folder uploaded by the user")
AnyDirectory = PortType("AnyDirectory", "Any directory (accepts every type)")
OnnxModel = PortType("OnnxModel", "A model in ONNX format")

PORT_TYPES = {
    t.name: t
    for t in (
        UntrainedModelDirectory,
        ModelDirectory,
        ImageDirectory,
        TransformationDirectory,
        ScoredDataset,
        EvaluationResults,
        UploadedFile,
        AnyDirectory,
        OnnxModel,
    )
}


# an input that also takes another type: a trained model's model.yaml is a superset of the
# untrained spec, so Train PyTorch Model can start from it (fine-tuning). the page module rules
# keeps the same table (its Node test compares the two).
ALSO_ACCEPTS = {UntrainedModelDirectory.name: (ModelDirectory.name,)}


def accepted_types(input: PortType) -> list[PortType]:
    """The types an input of this type takes (AnyDirectory takes every one: said as itself)."""
    return [input, *(PORT_TYPES[name] for name in ALSO_ACCEPTS.get(input.name, ()))]


def compatible(output: PortType, input: PortType) -> bool:
    return output == input or input == AnyDirectory or output.name in ALSO_ACCEPTS.get(input.name, ())


@dataclass(frozen=True)
class Port:
    label: str
    type: PortType
    optional: bool = False
    name: str = ""
    help: str = ""  # shown with the port on the canvas

    def __post_init__(self):
        if not self.name:
            object.__setattr__(self, "name", slug(self.label))

    def describe(self) -> dict:
        # what: the type in words, for messages ("images with a labels index", not "ImageDirectory")
        d: dict = {"name": self.name, "label": self.label, "type": self.type.name, "optional": self.optional,
                   "what": self.type.words}
        if self.help:
            d["help"] = self.help
        if self.type.name in ALSO_ACCEPTS:
            accepted = accepted_types(self.type)
            d["accepts"] = [t.name for t in accepted]
            d["accepts_what"] = [t.words for t in accepted]
        return d


# --------------------------------------------------------------------------- parameters


@dataclass
class Param:
    """A parameter. `check(value)` returns an error message, or None when the value is fine."""

    label: str
    default: Any = None
    help: str = ""
    name: str = ""
    filled_by_server: bool = False  # set at submit (a dataset's stored file): not in the pane, not the user's to edit
    type: str = field(default="str", init=False)

    def __post_init__(self):
        if not self.name:
            self.name = slug(self.label)

    def check(self, value: Any) -> str | None:
        return None

    def normalise(self, value: Any) -> Any:
        """The value as the module receives it and as its cache key sees it (a value checked fine)."""
        return value

    def describe(self) -> dict:
        d = {"name": self.name, "label": self.label, "type": self.type, "default": self.default, "help": self.help}
        return {**d, "filled_by_server": True} if self.filled_by_server else d


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def not_finite(value: Any) -> str | None:
    """Why a number cannot be a parameter value (or be stored at all), or None when it can.

    Python's json module reads NaN, Infinity and -Infinity, which JSON itself does not have, and
    turns a literal too large for a float (1e400) into Infinity: PostgreSQL refuses all of them."""
    if isinstance(value, float) and not math.isfinite(value):
        if value != value:
            return "NaN is not a number"
        return (f"{'-' if value < 0 else ''}Infinity (or a number too large for a float, such as 1e400) "
                "is not a finite number")
    return None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 24 else f"{text[:12]}...({len(text.lstrip('-'))} digits)"


# a whole number past this fits no integer type of the libraries the modules use (64-bit)
INT_LIMIT = 2**63 - 1
FLOAT_LIMIT = 1e12  # a float parameter's size where its declaration sets no min or max


@dataclass
class _Ranged(Param):
    min: float | None = None
    max: float | None = None
    min_exclusive: bool = False
    max_exclusive: bool = False

    def _range_text(self) -> str:
        lo = "" if self.min is None else f"{'>' if self.min_exclusive else '>='} {self.min}"
        hi = "" if self.max is None else f"{'<' if self.max_exclusive else '<='} {self.max}"
        return " and ".join(p for p in (lo, hi) if p)

    def _check_range(self, value) -> str | None:
        too_low = self.min is not None and (value <= self.min if self.min_exclusive else value < self.min)
        too_high = self.max is not None and (value >= self.max if self.max_exclusive else value > self.max)
        if too_low or too_high:
            return f"{value!r} is out of range: must be {self._range_text()}"
        return None

    def describe(self) -> dict:
        d = super().describe()
        d.update(min=self.min, max=self.max, min_exclusive=self.min_exclusive, max_exclusive=self.max_exclusive)
        return d


@dataclass
class Int(_Ranged):
    type: str = field(default="int", init=False)

    def check(self, value):
        if not _is_number(value):
            return f"expected a whole number, got {value!r}"
        if not_finite(value):
            return f"expected a whole number: {not_finite(value)}"
        if int(value) != value:
            return f"expected a whole number, got {value!r}"
        if abs(value) > INT_LIMIT:
            return f"{_short(value)} is too large: a whole number here is between {-INT_LIMIT} and {INT_LIMIT}"
        return self._check_range(value)

    def normalise(self, value):
        # 3.0 from a file is the same whole number as 3
        return int(value) if _is_number(value) and not not_finite(value) and int(value) == value else value


@dataclass
class Float(_Ranged):
    type: str = field(default="float", init=False)

    def check(self, value):
        if not _is_number(value):
            return f"expected a number, got {value!r}"
        if not_finite(value):  # also with no maximum: Infinity is no value a module can use
            return f"expected a finite number: {not_finite(value)}"
        if isinstance(value, int) and not -1e308 < value < 1e308:
            return f"{_short(value)} is too large for a floating-point number"
        # a side with no declared bound is bounded still: 1e308 passes a float, and overflows the first sum
        if (self.max is None and value > FLOAT_LIMIT) or (self.min is None and value < -FLOAT_LIMIT):
            return f"{value:g} is out of range: a number here is between {-FLOAT_LIMIT:g} and {FLOAT_LIMIT:g}"
        return self._check_range(value)

    def normalise(self, value):
        # a browser writes 2.0 as 2: both are the same parameter value, and reuse the same output
        return float(value) if _is_number(value) else value


@dataclass
class Bool(Param):
    type: str = field(default="bool", init=False)

    def check(self, value):
        if not isinstance(value, bool):
            return f"expected true or false, got {value!r}"
        return None


@dataclass
class Choice(Param):
    choices: tuple = ()
    type: str = field(default="choice", init=False)

    def check(self, value):
        if value not in self.choices:
            return f"{value!r} is not one of: {', '.join(map(str, self.choices))}"
        return None

    def describe(self) -> dict:
        return {**super().describe(), "choices": list(self.choices)}


@dataclass
class Text(Param):
    multiline: bool = False
    type: str = field(default="str", init=False)

    def check(self, value):
        if not isinstance(value, str):
            return f"expected text, got {value!r}"
        return None


# --------------------------------------------------------------------------- module


class Module:
    """Base class of every module type. Subclasses live one per file in `modules/`."""

    kind: str = ""  # stable id stored in pipeline JSON: never renamed
    label: str = ""  # shown in the palette
    category: str = ""
    version: int = 1  # bump when outputs change for the same inputs: invalidates cached outputs
    description: str = ""
    inputs: list[Port] = []
    outputs: list[Port] = []
    params: list[Param] = []
    distributed: bool = False  # offers Run settings (node count, process count per node)
    # the names it passes to ctx.metric(): what a sweep may optimise (primary_metric_name)
    metrics: tuple[str, ...] = ()
    metric_step: str = "step"  # what a metric's step counts ("epoch"): the x axis of its charts
    timeout_setting: bool = False  # offers the run setting "Timeout (seconds)" (timeout_seconds; 0: no limit)
    # a module declared in a component file: its sdk.component.ComponentSpec, and where it came from
    component = None
    component_origin: str = ""

    def run(self, ctx, **inputs):  # pragma: no cover - abstract
        raise NotImplementedError

    @classmethod
    def preflight(cls, params: dict, machines: tuple[Machine, ...] | None = None) -> list[tuple]:
        """What would make a run fail on the machines that run modules and can be known before it
        is submitted (pretrained weights that are on none of them): (parameter name, reason)
        pairs, or (name, reason, fixes) with its ways out, each {"label": "Untick Pretrained",
        "parameters": {"pretrained": False}}, one click on the page; [] when none. `params` are the node's values over the defaults, each checked fine;
        `machines` the live workers as they reported themselves, or None when none did (then
        this machine: the embedded app runs its worker here). The pipeline's validation calls it
        at every save, in the web process: quick, plain Python, no torch."""
        return []

    # ---- derived from the declaration

    @classmethod
    def param(cls, name: str) -> Param | None:
        return next((p for p in cls.params if p.name == name), None)

    @classmethod
    def input(cls, name: str) -> Port | None:
        return next((p for p in cls.inputs if p.name == name), None)

    @classmethod
    def output(cls, name: str) -> Port | None:
        return next((p for p in cls.outputs if p.name == name), None)

    @classmethod
    def resolved_params(cls, given: dict) -> dict:
        """Declared defaults overlaid with the given values."""
        return {p.name: p.normalise(given.get(p.name, p.default)) for p in cls.params}

    @classmethod
    def code_digest(cls) -> str:
        """The digest of a component's file and code (its outputs are not reused once they change);
        "" for a built-in module, whose `version` says when its outputs change."""
        return cls.component.digest() if cls.component is not None else ""

    @classmethod
    def describe(cls) -> dict:
        d = {
            "kind": cls.kind,
            "label": cls.label,
            "category": cls.category,
            "version": cls.version,
            "description": cls.description or (cls.__doc__ or "").strip(),
            "inputs": [p.describe() for p in cls.inputs],
            "outputs": [p.describe() for p in cls.outputs],
            "params": [p.describe() for p in cls.params],
            "distributed": cls.distributed,
            "metrics": list(cls.metrics),
            "metric_step": cls.metric_step,
            "timeout_setting": cls.timeout_setting,
        }
        if cls.component is not None:
            d["component"] = {"origin": cls.component_origin, "command": cls.component.command,
                              "digest": cls.code_digest(), "arguments": cls.component.arguments()}
            if cls.component.run_settings:  # an Azure ML v2 file's distribution and resources: a new node's Run settings
                d["component"]["run_settings"] = dict(cls.component.run_settings)
        return d
