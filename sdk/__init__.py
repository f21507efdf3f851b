"""The module SDK: everything a module author reads, and nothing else of the project.

    sdk/declarations.py   Module, Port, the port types, the parameter types (Int, Float, Bool, Choice, Text)
    sdk/errors.py         ModuleError and the named errors a module raises; Cancelled
    sdk/context.py        the Context a module's run(ctx, **inputs) receives, InputArtifact, DistributedJob
    sdk/formats/          the on-disk format of each port type, with its one reader and one writer
    sdk/layout.py         the names of the files the engine leaves in a node's folder (meta, logs)
    sdk/script.py         what a component's own script calls: log_metric, stop_requested (re-exported here)
    sdk/component.py      the component file (component.yaml): load and check it, render its command
                          (sdk/component_fields.py reads its fields)

It imports nothing of the project, neither Django nor torch: modules, training, the engine and
the web app import it. It is a package of its own (sdk/pyproject.toml), installed into the
project's environment by `make deps`: a component's script imports it as any installed library.
__version__ follows semantic versioning: the major number changes when a module or a script
written for the SDK would have to change (a name removed, the metrics lines read otherwise).
"""
from __future__ import annotations

from sdk.script import log_metric, stop_requested

__version__ = "1.0.0"
__all__ = ["__version__", "log_metric", "stop_requested"]
