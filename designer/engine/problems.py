"""A problem of a pipeline document, and the error that carries every problem found.

Its own file so that graph.py (which validates a document) and parameters.py (which checks
pipeline parameters and resolves them for a run) both use it without importing each other.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Problem:
    message: str
    code: str = "invalid"
    node: str | None = None
    port: str | None = None
    param: str | None = None  # a module parameter (of `node`)
    link: str | None = None
    # a pipeline parameter (parameters.py): the message names it, so the text adds no 'where' for it
    pipeline_parameter: str | None = None

    def __str__(self) -> str:
        where = []
        if self.node is not None:
            where.append(f"node {self.node!r}")
        if self.link is not None:
            where.append(f"link {self.link!r}")
        if self.port is not None:
            where.append(f"port {self.port!r}")
        if self.param is not None:
            where.append(f"parameter {self.param!r}")
        return f"{', '.join(where)}: {self.message}" if where else self.message

    def as_dict(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v is not None} | {"text": str(self)}


class PipelineInvalid(ValueError):
    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))
