"""`azureml.core.run.Run` as a script uses it (sdk/compat): in a component, the figures it logs
are the node's metrics (sdk.script.log_metric: live charts, a sweep's primary metric).

    run = Run.get_context()
    run.log("best_val_acc", 0.91)                 # numbered as it comes: 1, 2, 3... per name
    run.log("loss", 0.4, step=3)                  # at step 3 (the last value of a step wins)
    run.log_list("accuracies", [0.5, 0.7, 0.8])   # three figures of "accuracies", numbered
    run.log_row("curve", x=1, y=0.4)              # "curve/x" and "curve/y", numbered
    run.log_table("curve", {"x": [1, 2], "y": [0.4, 0.3]})
    run.tag("framework", "pytorch")               # a line of the driver log; get_tags() reads it back
    run.parent.log("best_val_acc", 0.91)          # a sweep's trial: recorded as the node's, as run.log

A value that is not a finite number (text, NaN) is not a metric: the driver log says so once per
name. Outside the designer (no DESIGNER_METRICS_FILE) get_context() gives an offline run that
prints what it was asked to log, as the original's offline run does
("Attempted to log scalar metric NAME:" then the value).
"""
from __future__ import annotations

import uuid
from typing import Any

from sdk.compat.recording import in_designer, note, note_once, number, record


class Run:
    """The run of the script: get_context(). Not made directly."""

    def __init__(self, run_id: str, offline: bool, parent: Run | None = None):
        self.id = run_id
        self._offline = offline
        self._parent = parent
        self._tags: dict[str, str] = {}
        self._logged: dict[str, Any] = {}  # a value, a list, or rows (dicts)

    @classmethod
    def get_context(cls, allow_offline: bool = True, **_kwargs) -> Run:
        if in_designer():
            return cls(f"designer_{uuid.uuid4().hex[:12]}", offline=False,
                       parent=cls("designer_parent", offline=False))
        if not allow_offline:
            raise RuntimeError("Run.get_context(allow_offline=False): not running in the designer or Azure ML")
        return cls(f"OfflineRun_{uuid.uuid4()}", offline=True)

    def __repr__(self) -> str:
        return f"Run(id: {self.id}, status: Running)"

    @property
    def parent(self) -> Run | None:
        """A sweep's trial logs to its parent (HyperDrive's run): here its figures are the node's too."""
        return self._parent

    # ---- metrics
    def log(self, name: str, value, description: str = "", step: int | None = None) -> None:
        self._logged[name] = value
        if self._offline:
            print(f"Attempted to log scalar metric {name}:\n{value}")
        else:
            record("azureml", name, value, step)

    def log_list(self, name: str, value, description: str = "") -> None:
        self._logged[name] = list(value)
        if self._offline:
            print(f"Attempted to log list metric {name}:\n{list(value)}")
            return
        for v in value:
            record("azureml", name, v)

    def log_row(self, name: str, description: str | None = None, **kwargs) -> None:
        self._logged.setdefault(name, []).append(kwargs)
        if self._offline:
            print(f"Attempted to log row metric {name}:\n{kwargs}")
            return
        for column, v in kwargs.items():
            if number(v) is not None:
                record("azureml", f"{name}/{column}", v)

    def log_table(self, name: str, value: dict, description: str = "") -> None:
        self._logged[name] = value
        if self._offline:
            print(f"Attempted to log table metric {name}:\n{value}")
            return
        for column, values in value.items():
            for v in values:
                if number(v) is not None:
                    record("azureml", f"{name}/{column}", v)

    def log_image(self, name: str, path: str | None = None, plot=None, description: str = "") -> None:
        if self._offline:
            print(f"Attempted to log image metric {name}:\n{path or plot}")
        else:
            note_once(f"image:{name}", f"(azureml) run.log_image({name!r}): images are not recorded as metrics; "
                                       f"save it in an output folder to keep it")

    def get_metrics(self, name: str | None = None, **_kwargs) -> dict:
        """What this process logged (the original reads the service's record)."""
        if name is None:
            return dict(self._logged)
        return {name: self._logged[name]} if name in self._logged else {}

    # ---- tags and properties
    def tag(self, key: str, value=None) -> None:
        self._tags[key] = "" if value is None else str(value)
        note(f"Attempted to tag {key}={self._tags[key]}" if self._offline else f"(azureml) tag {key}={self._tags[key]}")

    def set_tags(self, tags: dict) -> None:
        for key, value in tags.items():
            self.tag(key, value)

    def get_tags(self) -> dict:
        return dict(self._tags)

    def add_properties(self, properties: dict) -> None:
        self.set_tags(properties)

    # ---- files and the run's end: the node's output folders and exit code say these
    def upload_file(self, name: str, path_or_stream, **_kwargs) -> None:
        note(f"Attempted to track file {name} at {path_or_stream}" if self._offline else
             f"(azureml) run.upload_file({name!r}): not copied; write files to an output folder to keep them")

    def upload_folder(self, name: str, path: str, **_kwargs) -> None:
        self.upload_file(name, path)

    def complete(self, **_kwargs) -> None:
        pass

    def fail(self, error_details=None, **_kwargs) -> None:
        note(f"(azureml) run.fail(): {error_details}" if error_details else "(azureml) run.fail()")

    def flush(self, **_kwargs) -> None:
        pass

    def get_status(self) -> str:
        return "Running"
